# shellcheck shell=sh
# shellcheck disable=SC2034  # SCHED_* variables are read by the scripts that source this
# Shared helpers for every guest script (busybox sh): the VM tests' (tests/vm/guest/), the lab's
# bench and the demos (scripts/guest/). scripts/vm/mkinitramfs.sh installs it in the guest as
# /sis/lib.sh, beside the one guest script the image boots (/guest/). Source it: . /sis/lib.sh
#
# Output conventions (parsed by tests/vm/harness.rs):
#   SIS-TEST PASS <name> <details>     one line per check the guest makes itself (operational:
#   SIS-TEST FAIL <name> <details>     started, unloaded, refused bad input)
#   SIS-REC <kind> <name> <payload>    one line per record for the host to judge (tests/vm/records.rs),
#                                      kind mon (a monitor --json object), kv (key=value words, a
#                                      [..] value may hold spaces), json, text (a raw line); all
#                                      printed by finish
#   SIS-INFO <text>                    anything informative
# finish() prints a summary, dumps the scheduler log and dmesg if a check failed or records were
# printed (the host's verdicts may fail), and exits 1 if a check failed.
#
# Note: in a non-interactive shell, commands started with & ignore SIGINT (POSIX); scx_sis installs
# its own handler, so stop_sched's SIGINT still reaches it. Kill helper processes with TERM/KILL.

SIS_PASSES=0
SIS_FAILS=0
SIS_RECS=0
SCHED_PID=
SCHED_LOG=/tmp/sched.log
SCX_DIR=/sys/kernel/sched_ext

pass() { _n=$1; shift; echo "SIS-TEST PASS $_n $*"; SIS_PASSES=$((SIS_PASSES + 1)); }
fail() { _n=$1; shift; echo "SIS-TEST FAIL $_n $*"; SIS_FAILS=$((SIS_FAILS + 1)); }
info() { echo "SIS-INFO $*"; }

# rec KIND NAME PAYLOAD...: one record. Records are kept in SIS_REC_FILE and printed by finish:
# kilobytes of JSON on the serial console cost the guest CPU time, which the measurements that
# follow (SIS_UTIL's utilization, kworker latency) can see.
SIS_REC_FILE=/tmp/sis_records
: >"$SIS_REC_FILE"
rec() {
  _rk=$1 _rn=$2
  shift 2
  printf 'SIS-REC %s %s %s\n' "$_rk" "$_rn" "$*" >>"$SIS_REC_FILE"
  SIS_RECS=$((SIS_RECS + 1))
}

# rec_lines KIND NAME FILE: each non-empty line of FILE as a record.
rec_lines() {
  [ -f "$3" ] || return 0
  while IFS= read -r _rl || [ -n "$_rl" ]; do
    [ -n "$_rl" ] && rec "$1" "$2" "$_rl"
  done <"$3"
}

# rec_mon NAME FILE: a `scx_sis monitor --json` output: its JSON lines as mon records, its other
# lines (errors) as text records, all called NAME.
rec_mon() {
  [ -f "$2" ] || return 0
  while IFS= read -r _rl || [ -n "$_rl" ]; do
    case $_rl in
      "{"*) rec mon "$1" "$_rl" ;;
      ?*) rec text "$1" "$_rl" ;;
    esac
  done <"$2"
}

# Guest uptime in centiseconds (1${frac} avoids octal parsing of e.g. "05").
now_cs() {
  read -r _up _ </proc/uptime
  echo $((${_up%.*} * 100 + 1${_up#*.} - 100))
}
fmt_cs() { printf '%d.%02d' $(($1 / 100)) $(($1 % 100)); }

# --------------------------------------------------------------------------- sched_ext state
scx_state() { cat "$SCX_DIR/state" 2>/dev/null || echo missing; }
scx_ops() { cat "$SCX_DIR/root/ops" 2>/dev/null; }

# wait_state WANT SECS: poll until state == WANT; returns 1 on timeout.
wait_state() {
  _deadline=$(($(now_cs) + $2 * 100))
  while [ "$(scx_state)" != "$1" ]; do
    [ "$(now_cs)" -ge "$_deadline" ] && return 1
    sleep 0.2
  done
  return 0
}

sched_alive() {
  [ -n "$SCHED_PID" ] && [ -d "/proc/$SCHED_PID" ] &&
    ! grep -q '^State:[[:space:]]*Z' "/proc/$SCHED_PID/status" 2>/dev/null
}

# start_sched ARGS...: start /bin/scx_sis ARGS in the background (output in /tmp/sched.log) and
# wait up to SIS_START_TIMEOUT s for sched_ext to be enabled. The default is 60 s, not 20: the BPF
# verifier runs ~100x slower under TCG. Sets SCHED_PID and SCHED_START_CS (time to enable, in
# centiseconds). Returns 1 if it did not come up, with the reason in SCHED_START_ERR.
start_sched() {
  : >"$SCHED_LOG"
  SCHED_START_ERR=
  _t0=$(now_cs)
  /bin/scx_sis "$@" >"$SCHED_LOG" 2>&1 &
  SCHED_PID=$!
  _deadline=$((_t0 + ${SIS_START_TIMEOUT:-60} * 100))
  while [ "$(scx_state)" != enabled ]; do
    if ! sched_alive; then
      wait "$SCHED_PID"
      SCHED_START_ERR="scx_sis exited with rc $? after $(fmt_cs $(($(now_cs) - _t0)))s before sched_ext was enabled"
      SCHED_PID=
      return 1
    fi
    if [ "$(now_cs)" -ge "$_deadline" ]; then
      SCHED_START_ERR="state=$(scx_state) ${SIS_START_TIMEOUT:-60}s after starting scx_sis (still running)"
      return 1
    fi
    sleep 0.2
  done
  SCHED_START_CS=$(($(now_cs) - _t0))
  return 0
}

# stop_sched [SECS]: SIGINT scx_sis, wait for it (SIGKILL after SECS, default 20). Returns its rc.
stop_sched() {
  [ -n "$SCHED_PID" ] || return 0
  kill -INT "$SCHED_PID" 2>/dev/null
  (sleep "${1:-20}"; kill -KILL "$SCHED_PID" 2>/dev/null) &
  _wd=$!
  wait "$SCHED_PID"
  _rc=$?
  kill "$_wd" 2>/dev/null
  wait "$_wd" 2>/dev/null
  SCHED_PID=
  return $_rc
}

dump_sched_log() {
  [ -s "$SCHED_LOG" ] || return 0
  echo "----- $SCHED_LOG (last ${1:-100} lines) -----"
  tail -n "${1:-100}" "$SCHED_LOG"
  echo "----- end of $SCHED_LOG -----"
}

dump_dmesg() {
  echo "----- dmesg (last ${1:-60} lines) -----"
  dmesg | tail -n "${1:-60}"
  echo "----- end of dmesg -----"
}

# dmesg lines that mean sched_ext or the scheduler went wrong (stall ejection, BPF error, ...),
# or that it uses an interface the kernel deprecates (7.3: "sched_ext: ops->cpu_acquire/release()
# are deprecated, ..."), from dmesg line FROM (default 1) on. A clean unload ("unregistered from
# user space") is fine.
scx_dmesg_errors() {
  dmesg | tail -n +"${1:-1}" | grep -iE 'runnable task stall|sched_ext.*(error|stall|watchdog|fail|deprecated)|scx.*deprecated|scx_bpf_error|BUG:|WARNING:|Oops|soft lockup|hung task' |
    grep -v 'unregistered from user' || true
}

finish() {
  if sched_alive; then
    info "scx_sis still running at finish, stopping it"
    stop_sched 10 || true
  fi
  cat "$SIS_REC_FILE"
  echo "SIS-SUMMARY passed=$SIS_PASSES failed=$SIS_FAILS records=$SIS_RECS"
  if [ "$SIS_FAILS" -ne 0 ] || [ "$SIS_RECS" -ne 0 ]; then
    dump_sched_log 150
    dump_dmesg 80
  fi
  [ "$SIS_FAILS" -eq 0 ] || exit 1
  exit 0
}

# --------------------------------------------------------------------------- shared checks

# The harness's topology promise for SIS_TOPO: LLC groups and SMT sibling groups.
check_topology() {
  _llcs=$(cat /sys/devices/system/cpu/cpu[0-9]*/cache/index3/shared_cpu_list 2>/dev/null | sort -u | tr '\n' ' ')
  _smt=$(cat /sys/devices/system/cpu/cpu[0-9]*/topology/thread_siblings_list 2>/dev/null | sort -u | tr '\n' ' ')
  _nodes=$(find /sys/devices/system/node -maxdepth 1 -name 'node[0-9]*' 2>/dev/null | wc -l)
  _doms=$(cat /sys/kernel/debug/sched/domains/cpu0/domain*/name 2>/dev/null | tr '\n' ' ')
  _detail="cpus=$(nproc) llc=[${_llcs% }] smt=[${_smt% }] nodes=$_nodes cpu0_domains=[${_doms% }]"
  case ${SIS_TOPO:-} in
    2llc-smt) _want_llc="0-3 4-7"; _want_smt="0-1 2-3 4-5 6-7" ;;
    2llc|2numa) _want_llc="0-3 4-7"; _want_smt="0 1 2 3 4 5 6 7" ;;
    1llc) _want_llc="0-7"; _want_smt="0 1 2 3 4 5 6 7" ;;
    1llc-smt) _want_llc="0-7"; _want_smt="0-1 2-3 4-5 6-7" ;;
    smp4) _want_llc="0-3"; _want_smt="0 1 2 3" ;;
    2cpu) _want_llc="0-1"; _want_smt="0 1" ;;
    *) info "topology $_detail (SIS_TOPO=${SIS_TOPO:-unset}: nothing to compare)"; return 0 ;;
  esac
  # sort -u above sorts lexically; compare as sets.
  _got_llc=$(echo "$_llcs" | tr ' ' '\n' | sed '/^$/d' | sort | tr '\n' ' ')
  _exp_llc=$(echo "$_want_llc" | tr ' ' '\n' | sort | tr '\n' ' ')
  _got_smt=$(echo "$_smt" | tr ' ' '\n' | sed '/^$/d' | sort | tr '\n' ' ')
  _exp_smt=$(echo "$_want_smt" | tr ' ' '\n' | sort | tr '\n' ' ')
  if [ "$_got_llc" = "$_exp_llc" ] && [ "$_got_smt" = "$_exp_smt" ]; then
    pass topology "$SIS_TOPO $_detail"
  else
    fail topology "$SIS_TOPO want llc=[$_want_llc] smt=[$_want_smt], got $_detail"
  fi
}

# --------------------------------------------------------------------------- opening and closing
# A script that runs scx_sis opens with guest_open, starts it with guest_start (or its own way),
# makes its checks, and ends with guest_close and finish.

GUEST_DMESG0=0
GUEST_DAEMON=

# guest_open [NAME [BIN_NAME]]: check_topology; then sched_ext present and disabled, else fail NAME
# (default preconditions), and /bin/scx_sis there, else fail BIN_NAME (default NAME), and finish
# on either; then mark dmesg: dmesg_clean reads the kernel's lines from here on only, since a boot
# under a loaded TCG host logs harmless "bug"/"failed" lines.
guest_open() {
  check_topology
  _gn=${1:-preconditions}
  _gwhy=
  if [ ! -f "$SCX_DIR/state" ]; then
    _gwhy="$SCX_DIR/state missing: kernel lacks CONFIG_SCHED_CLASS_EXT"
  elif [ "$(scx_state)" != disabled ]; then
    _gwhy="state=$(scx_state) before scx_sis started (expected disabled)"
  elif [ ! -x /bin/scx_sis ]; then
    _gn=${2:-$_gn}
    _gwhy="/bin/scx_sis missing (run.sh --bin)"
  fi
  if [ -n "$_gwhy" ]; then
    fail "$_gn" "$_gwhy"
    finish
  fi
  GUEST_DMESG0=$(dmesg | wc -l)
}

# guest_start ARGS...: start_sched ARGS. Not enabled: fail sched_enabled with start_sched's reason
# and the log's last line, and finish. Enabled: pass sched_enabled (ops, time to enable, ARGS), or
# fail it if the ops are not scx_sis's, and go on. Sets GUEST_DAEMON, the daemon's PID, which
# sched_survived expects still to be running at the end.
guest_start() {
  if ! start_sched "$@"; then
    fail sched_enabled "$SCHED_START_ERR; last log line: $(tail -n 1 "$SCHED_LOG" | cut -c1-200)"
    finish
  fi
  GUEST_DAEMON=$SCHED_PID
  _gops=$(scx_ops)
  case $_gops in
    scx_sis*) pass sched_enabled "state=enabled ops=$_gops after $(fmt_cs "$SCHED_START_CS")s${*:+ with $*}" ;;
    *) fail sched_enabled "state=enabled but $SCX_DIR/root/ops='$_gops' (expected scx_sis*)" ;;
  esac
}

# guest_close [CHECK...]: the closing checks, in the order given (default: sched_survived
# dmesg_clean sigint_unload), each one SIS-TEST line of that name:
#   sched_survived  sched_ext still enabled and the daemon alive, the PID guest_start started (a
#                   watchdog ejection, a BPF error or a restart by the script fails it)
#   dmesg_clean     no scx_dmesg_errors line since guest_open's mark (the whole dmesg without one)
#   sigint_unload   SIGINT: scx_sis exits 0 and sched_ext is disabled within 5 s
#   unload          SIGINT: scx_sis exits 0 (the state is shown, not checked)
# The caller then calls finish.
guest_close() {
  [ $# -gt 0 ] || set -- sched_survived dmesg_clean sigint_unload
  for _gc in "$@"; do
    case $_gc in
      sched_survived)
        _gst=$(scx_state)
        if [ "$_gst" = enabled ] && sched_alive && { [ -z "$GUEST_DAEMON" ] || [ "$SCHED_PID" = "$GUEST_DAEMON" ]; }; then
          pass sched_survived "state=enabled, scx_sis pid $SCHED_PID alive, ops=$(scx_ops), restarts=$(rel_count 'asked for a restart' "$SCHED_LOG")"
        else
          fail sched_survived "state=$_gst, scx_sis alive=$(sched_alive && echo yes || echo no)"
        fi
        ;;
      dmesg_clean)
        _gerrs=$(scx_dmesg_errors $((GUEST_DMESG0 + 1)))
        if [ -z "$_gerrs" ]; then
          pass dmesg_clean "no sched_ext error / stall / BUG / WARNING in dmesg"
        else
          fail dmesg_clean "$(echo "$_gerrs" | head -n 3 | tr '\n' '|')"
        fi
        ;;
      sigint_unload)
        _gt0=$(now_cs)
        stop_sched 20
        _grc=$?
        if wait_state disabled 5; then
          _gst=state=disabled
        else
          _gst="state=$(scx_state) 5s after exit"
        fi
        _gd="rc=$_grc $_gst after $(fmt_cs $(($(now_cs) - _gt0)))s; dmesg: $(dmesg | grep -i 'sched_ext' | tail -n 1 | sed 's/^\[[^]]*\] *//')"
        if [ $_grc -eq 0 ] && [ "$_gst" = state=disabled ]; then
          pass sigint_unload "$_gd"
        else
          fail sigint_unload "$_gd"
        fi
        ;;
      unload)
        stop_sched 20
        _grc=$?
        if [ $_grc -eq 0 ]; then
          pass unload "rc=0 state=$(scx_state)"
        else
          fail unload "rc=$_grc state=$(scx_state)"
        fi
        ;;
      *) fail guest_close "no closing check called '$_gc'" ;;
    esac
  done
}

# wait_trace_on: wait up to 10 s for a `scx_sis trace` just started to switch the trace on
# (tune --show says so), so that what runs next lies inside its window.
wait_trace_on() {
  _wi=0
  while ! /bin/scx_sis tune --show 2>/dev/null | grep -q '^trace  *on' && [ $_wi -lt 100 ]; do
    sleep 0.1
    _wi=$((_wi + 1))
  done
}

# run_hackbench NAME ARGS...: hackbench must exit 0; prints its Time line and the wall time.
run_hackbench() {
  _name=$1; shift
  _t0=$(now_cs)
  hackbench "$@" >/tmp/hackbench.out 2>&1
  _rc=$?
  _wall=$(fmt_cs $(($(now_cs) - _t0)))
  _time=$(grep -m1 '^Time:' /tmp/hackbench.out)
  if [ $_rc -eq 0 ] && [ -n "$_time" ]; then
    pass "$_name" "hackbench $* rc=0 $_time wall=${_wall}s"
  else
    fail "$_name" "hackbench $* rc=$_rc wall=${_wall}s: $(tail -n 3 /tmp/hackbench.out | tr '\n' ' ')"
  fi
}

_ticks() { # pid -> utime+stime (clock ticks)
  # /proc/PID/stat: field 2 is "(sh)" here, so plain word splitting keeps the field numbers.
  # shellcheck disable=SC2046
  set -- $(cat "/proc/$1/stat")
  echo $((${14} + ${15}))
}

# check_nice [CPU] [SECS]: a nice-0 and a nice-10 busy loop share one CPU; their CPU time
# ratio must be within 25% of weight(0)/weight(10) = 1024/110.
check_nice() {
  _cpu=${1:-3}
  _secs=${2:-12}
  taskset -c "$_cpu" sh -c 'while :; do :; done' &
  _p0=$!
  taskset -c "$_cpu" nice -n 10 sh -c 'while :; do :; done' &
  _p10=$!
  sleep 2 # let both settle (exec chain taskset -> nice -> sh keeps the PID)
  _a0=$(_ticks $_p0)
  _a10=$(_ticks $_p10)
  sleep "$_secs"
  _b0=$(_ticks $_p0)
  _b10=$(_ticks $_p10)
  _n0=$(awk '{print $19}' "/proc/$_p0/stat")
  _n10=$(awk '{print $19}' "/proc/$_p10/stat")
  kill -KILL $_p0 $_p10 2>/dev/null
  wait $_p0 $_p10 2>/dev/null
  _d0=$((_b0 - _a0))
  _d10=$((_b10 - _a10))
  _res=$(awk -v a="$_d0" -v b="$_d10" 'BEGIN {
    want = 1024 / 110
    if (b <= 0) { printf "inf 0"; exit }
    r = a / b; dev = (r - want) / want; if (dev < 0) dev = -dev
    printf "%.2f %d", r, (dev <= 0.25) }')
  _ratio=${_res% *}
  _ok=${_res#* }
  _detail="cpu=$_cpu secs=$_secs nice0_ticks=$_d0 nice10_ticks=$_d10 (nice $_n0/$_n10) ratio=$_ratio expected=9.31 tol=25% sum=$((_d0 + _d10))/$((_secs * 100))"
  if [ "$_ok" = 1 ]; then
    pass nice_fairness "$_detail"
  else
    fail nice_fairness "$_detail"
  fi
}

# run_stress NAME SECS: the stress-ng mix; must exit 0.
run_stress() {
  _name=$1
  _secs=${2:-60}
  _t0=$(now_cs)
  # shellcheck disable=SC2086
  stress-ng ${SIS_STRESS_ARGS:---cpu 4 --fork 2 --pipe 2 --futex 2 --schedpolicy 2 --race-sched 1} \
    --timeout "${_secs}s" --metrics-brief >/tmp/stress.out 2>&1
  _rc=$?
  _wall=$(fmt_cs $(($(now_cs) - _t0)))
  if [ $_rc -eq 0 ]; then
    pass "$_name" "stress-ng ${_secs}s rc=0 wall=${_wall}s"
  else
    fail "$_name" "stress-ng ${_secs}s rc=$_rc wall=${_wall}s"
    tail -n 20 /tmp/stress.out
  fi
  grep -E 'stress-ng: (info|metrc).*(cpu|fork|pipe|futex|schedpolicy|race-sched) ' /tmp/stress.out | sed 's/^/SIS-INFO stress: /' | head -n 12
}

# nobody_usable: make user nobody able to run the binaries, for the checks of what a user who is
# not root is told. The initramfs root comes from `mktemp -d` (mode 0700), so other users reach
# /bin only once it is 0755; su needs nobody in /etc/passwd and its group in /etc/group.
nobody_usable() {
  chmod 755 /
  grep -q '^nobody:' /etc/passwd || echo 'nobody:x:65534:65534:nobody:/tmp:/bin/sh' >>/etc/passwd
  grep -q '^nogroup:' /etc/group || echo 'nogroup:x:65534:' >>/etc/group
}

# --------------------------------------------------------------------------- helpers (runtime control)

# run_capped SECS CMD...: run CMD with stdout in $CAP_OUT and stderr in $CAP_ERR (defaults
# /tmp/capped.out, /tmp/capped.err); SIGKILL it after SECS. Returns its rc (137 when killed).
run_capped() {
  _secs=$1; shift
  "$@" >"${CAP_OUT:-/tmp/capped.out}" 2>"${CAP_ERR:-/tmp/capped.err}" &
  _cp=$!
  (sleep "$_secs"; kill -KILL "$_cp" 2>/dev/null) &
  _cw=$!
  wait "$_cp"
  _crc=$?
  kill "$_cw" 2>/dev/null
  wait "$_cw" 2>/dev/null
  return $_crc
}

# tune ARGS...: `scx_sis tune ARGS`, SIGKILLed after 30 s; sets TUNE_RC, its stdout in $TUNE_OUT and
# its stderr in $TUNE_ERR.
TUNE_OUT=/tmp/tune.out
TUNE_ERR=/tmp/tune.err
tune() {
  CAP_OUT=$TUNE_OUT CAP_ERR=$TUNE_ERR run_capped 30 /bin/scx_sis tune "$@"
  TUNE_RC=$?
}

# wait_log TEXT SECS: poll until the scheduler log contains TEXT (fixed string); 1 on timeout.
wait_log() {
  _deadline=$(($(now_cs) + $2 * 100))
  until grep -qF -- "$1" "$SCHED_LOG"; do
    [ "$(now_cs)" -ge "$_deadline" ] && return 1
    sleep 0.2
  done
  return 0
}

# start_bg_loop CMD...: run CMD over and over in the background until stop_bg_loop; each run's
# rc is appended to /tmp/bg_loop.rcs. Sets BG_LOOP_PID.
start_bg_loop() {
  rm -f /tmp/bg_loop.stop /tmp/bg_loop.rcs
  : >/tmp/bg_loop.rcs
  (
    while [ ! -e /tmp/bg_loop.stop ]; do
      "$@" >/dev/null 2>&1
      echo $? >>/tmp/bg_loop.rcs
    done
  ) &
  BG_LOOP_PID=$!
}

# stop_bg_loop [SECS]: ask the loop to stop after its current run (SIGKILL after SECS, default 30).
# Sets BG_LOOP_RUNS and BG_LOOP_FAILS (runs with a non-zero rc).
stop_bg_loop() {
  [ -n "$BG_LOOP_PID" ] || return 0
  touch /tmp/bg_loop.stop
  (sleep "${1:-30}"; kill -KILL "$BG_LOOP_PID" 2>/dev/null) &
  _bw=$!
  wait "$BG_LOOP_PID"
  kill "$_bw" 2>/dev/null
  wait "$_bw" 2>/dev/null
  BG_LOOP_PID=
  BG_LOOP_RUNS=$(wc -l </tmp/bg_loop.rcs)
  BG_LOOP_FAILS=$(grep -cv '^0$' /tmp/bg_loop.rcs)
}

# check_bg_loop NAME SECS WHAT: stop_bg_loop SECS, then pass NAME if it ran at least once and every
# run had rc 0 ("N WHAT, all rc=0"); otherwise fail with the count of each rc.
check_bg_loop() {
  stop_bg_loop "$2"
  if [ "${BG_LOOP_RUNS:-0}" -gt 0 ] && [ "${BG_LOOP_FAILS:-1}" -eq 0 ]; then
    pass "$1" "$BG_LOOP_RUNS $3, all rc=0"
  else
    fail "$1" "$BG_LOOP_RUNS $3, $BG_LOOP_FAILS with rc!=0: $(sort /tmp/bg_loop.rcs | uniq -c | tr -s ' \n' ' ')"
  fi
}

# --------------------------------------------------------------------------- helpers (reliability, fairness, chaos)
# The samplers poll several times a second while a load runs, and a fork costs milliseconds under
# TCG, so the hot helpers fork nothing: they read /proc and sysfs with the shell's own `read`,
# return values in REL_* variables instead of through $(...), and rel_nap sleeps in `read -t` on a
# FIFO nobody writes to. The ones only reliability.sh uses are in tests/vm/guest/reliability_lib.sh
# (/guest/reliability_lib.sh in its image).

# rel_now: guest uptime in centiseconds in REL_NOW (now_cs without the subshell).
rel_now() {
  read -r _up _ </proc/uptime
  REL_NOW=$((${_up%.*} * 100 + 1${_up#*.} - 100))
}

# rel_nap SECS: sleep (fractions allowed) without forking.
rel_nap() {
  [ -p /tmp/rel_nap.fifo ] || mkfifo /tmp/rel_nap.fifo 2>/dev/null
  # shellcheck disable=SC3045  # busybox ash's read has -t, with fractions
  read -r -t "$1" _ <>/tmp/rel_nap.fifo
  return 0
}

# rel_state: the sched_ext state ("missing" without sched_ext).
rel_state() {
  _rs=missing
  read -r _rs 2>/dev/null <"$SCX_DIR/state"
  echo "$_rs"
}

# rel_stat PID: /proc/PID/stat from field 3 on in REL_STAT (the comm, field 2, may hold spaces), so
# field N is word N-2. Returns 1 when PID is gone.
rel_stat() {
  REL_STAT=
  read -r REL_STAT 2>/dev/null <"/proc/$1/stat" || return 1
  REL_STAT=${REL_STAT##*") "}
}

# rel_ticks PID: utime+stime in clock ticks (USER_HZ, 100/s) in REL_TICKS; 1 when PID is gone.
rel_ticks() {
  REL_TICKS=
  rel_stat "$1" || return 1
  # shellcheck disable=SC2086  # word splitting intended
  set -- $REL_STAT
  REL_TICKS=$((${12} + ${13}))
}

# rel_cpu PID: field 39 of /proc/PID/stat, the CPU the task last ran on, in REL_CPU.
rel_cpu() {
  REL_CPU=
  rel_stat "$1" || return 1
  # shellcheck disable=SC2086
  set -- $REL_STAT
  REL_CPU=${37}
}

# rel_ejections FROM: sched_ext "BPF scheduler ... disabled" lines in dmesg from line FROM on.
rel_ejections() {
  dmesg | tail -n +"${1:-1}" | grep -c 'sched_ext: BPF scheduler .* disabled' || true
}

# rel_wait_exit PID SECS: wait for PID (a child of this shell) to exit, SIGKILL after SECS.
# Sets REL_RC (137 when it had to be killed) and REL_EXIT_CS (centiseconds it took).
rel_wait_exit() {
  rel_now
  _wt0=$REL_NOW
  (sleep "$2"; kill -KILL "$1" 2>/dev/null) &
  _ww=$!
  wait "$1"
  REL_RC=$?
  rel_now
  REL_EXIT_CS=$((REL_NOW - _wt0))
  kill "$_ww" 2>/dev/null
  wait "$_ww" 2>/dev/null
}

# rel_count TEXT FILE: prints the number of lines of FILE containing TEXT (fixed string).
rel_count() {
  _cnt=$(grep -cF -- "$1" "$2" 2>/dev/null)
  echo "${_cnt:-0}"
}

# rel_oneline FILE: FILE's lines joined by "|", at most 300 characters.
rel_oneline() { tr '\n' '|' <"$1" | cut -c1-300; }

# --------------------------------------------------------------------------- helpers (fairness, chaos)

# spin_nice CPULIST|- NICE: start a busy loop (pinned to CPULIST unless "-") at nice NICE. The
# exec chain taskset -> nice -> sh keeps the PID. Sets REL_PID.
spin_nice() {
  if [ "$1" = - ]; then
    nice -n "$2" sh -c 'while :; do :; done' &
  else
    taskset -c "$1" nice -n "$2" sh -c 'while :; do :; done' &
  fi
  REL_PID=$!
}

# ticks_of PID...: their utime+stime (USER_HZ ticks) in TICKS_OF, one word each, 0 for a PID that
# is gone. One cat reads every file within microseconds: the shell's own reads took 2-6 s for 12
# loops on a busy TCG guest, so each loop's window shifted by its place in the list, and the
# first loops' ticks ran up to 12% above the last ones' under EEVDF and scx_sis alike.
ticks_of() {
  _files=
  for _p in "$@"; do _files="$_files /proc/$_p/stat"; done
  # shellcheck disable=SC2086  # one word per file
  TICKS_OF=$(cat $_files 2>/dev/null | awk -v want="$*" '
    { s = $0; sub(/^.*\) /, "", s); split(s, f, " "); t[$1] = f[12] + f[13] }
    END { n = split(want, w, " "); for (i = 1; i <= n; i++) printf "%s%d", (i > 1 ? " " : ""), (w[i] in t ? t[w[i]] : 0) }')
}

# mon_window_start FILE: `scx_sis monitor --json` over one window that mon_window_stop ends (its
# counters are deltas over the whole window); waits 1 s for the monitor's first read. Sets MON_WIN_PID.
mon_window_start() {
  MON_WIN_FILE=$1
  /bin/scx_sis monitor --json --interval 3600 --count 1 >"$MON_WIN_FILE" 2>&1 &
  MON_WIN_PID=$!
  sleep 1
}

# mon_window_stop NAME: SIGINT ends the window (the monitor prints the object covering it); SIGKILL
# after 10 s. Prints the output as record NAME (rec_mon) and the monitor's rc as record kv NAME_rc;
# sets MON_WIN_RC.
mon_window_stop() {
  MON_WIN_RC=1
  [ -n "${MON_WIN_PID:-}" ] || return 0
  kill -INT "$MON_WIN_PID" 2>/dev/null
  rel_wait_exit "$MON_WIN_PID" 10
  MON_WIN_RC=$REL_RC
  MON_WIN_PID=
  rec_mon "$1" "$MON_WIN_FILE"
  rec kv "${1}_rc" "rc=$MON_WIN_RC"
}
