#!/bin/sh
# Reliability: stress, faults and bad input.
#   bad input   out-of-range / unknown values at start and through `tune`, a second instance, not
#               root: one-line error, non-zero exit, nothing changed (before and while running)
#   load        a stress-ng mix at 2x the CPUs for SIS_REL_SECS with every placement stage on, then
#               again with the wakequeue switched on live; hackbench at > 8x the CPUs after each;
#               no ejection, no sched_ext error in dmesg, the same daemon still running
#   affinity    during each load: tasks pinned to one CPU, a sleeping and a running task whose
#               affinity another process keeps changing, per-CPU kthreads (bound kworkers made to
#               work through /proc/sys/vm/stat_refresh, ksoftirqd): all run, and only where allowed
#   hygiene     the daemon's VmRSS from the start of the first load to the end of the second
#   rt_preempt  a SCHED_FIFO hog takes the CPU of a running task that may move: it moves
#   hotplug     CPU SIS_REL_HOTPLUG_CPU off and on under load: enabled again, daemon says why
#   faults      sysrq-S, SIGKILL, an injected scx_bpf_error(): EEVDF afterwards, the daemon prints
#               the kernel's reason and exits non-zero, a fresh start works
# Env knobs: SIS_REL_SECS (each load, default 180; 600 for a long run), SIS_REL_AFFINITY_SECS
# (default SECS/2 within 30..90), SIS_REL_HB_LOOPS (default 50), SIS_REL_HOTPLUG_CPU (default 3),
# SIS_REL_ENABLE_SECS (bound on "enabled again", default 60), SIS_REL_KWORKER_MAX_CS (bound on one
# stat_refresh, default 2500 = 25 s), SIS_REL_MIX (the stress-ng stressors, default below),
# SIS_REL_FIRST_LOAD_ONLY (stop after the first load).
# The minimums below (progress, affinity changes, monitor objects) are low and the bounds long on
# purpose: these checks are for starvation and misplacement, not latency. Other VMs and builds may
# share the host's 2 cores (load average 10 was seen), and a guest that gets a fifth of a core
# must still pass; a task or kworker that waits 20-25 s is failed, the watchdog's limit being 30 s.
# The checks on numbers (affinity, kthreads, stress, monitor, hackbench, RSS, rt_preempt, the CPU
# back after hotplug, its stats) are made by tests/vm/reliability.rs on the records (SIS-REC) this
# script prints; the operational ones (bad input, faults, unload) here.
. /sis/lib.sh
. /guest/reliability_lib.sh

SECS=${SIS_REL_SECS:-180}
AFF=${SIS_REL_AFFINITY_SECS:-$((SECS / 2))}
[ "$AFF" -lt 30 ] && AFF=30
[ "$AFF" -gt 90 ] && AFF=90
HB_LOOPS=${SIS_REL_HB_LOOPS:-50}
HCPU=${SIS_REL_HOTPLUG_CPU:-3}
# Loading takes 2-4 s in an idle guest, but 20-40 s under load with other VMs on the host.
ENABLE_SECS=${SIS_REL_ENABLE_SECS:-60}
SIS_START_TIMEOUT=${SIS_START_TIMEOUT:-120}
# 25 s: under EEVDF a stat_refresh took at most 0.5 s here, under scx_sis 2-8 s with three VMs on
# the host and 17 s with four (load average 10); the sched_ext watchdog ejects at 30 s.
KW_MAX=${SIS_REL_KWORKER_MAX_CS:-2500}
PIN=/sys/fs/bpf/scx_sis/tunables
N=$(nproc)
FEATURES="--preset sis --prev-bias on --idle-core on --wake-sync on --cross-llc on --sis-util quadratic"
T_START=$(now_cs)
rec kv rel_params "secs=$SECS aff=$AFF kw_max_cs=$KW_MAX n=$N hcpu=$HCPU"

info "uname -r: $(uname -r), $N CPUs, SIS_REL_SECS=$SECS affinity window ${AFF}s"
guest_open

# Per-CPU kthreads (ksoftirqd/N, kworker/N:M) as pid:cpu, listed now: /proc is slow to walk under
# load.
KTHREADS=$(rel_kthreads | tr '\n' ' ')
info "per-CPU kthreads to watch: $(echo "$KTHREADS" | wc -w)"

# A user without privileges for the "not root" checks (the initramfs has only root).
nobody_usable

# sched_start ARGS...: start_sched with every stage on (FEATURES) and ARGS, after keeping the
# previous daemon's log as /tmp/sched.N.log (start_sched truncates it). A 256 KB exit dump (the
# kernel's default is 32 KB) so that an ejection shows every CPU's queues.
NLOG=0
sched_start() {
  if [ -s "$SCHED_LOG" ]; then
    NLOG=$((NLOG + 1))
    cp "$SCHED_LOG" "/tmp/sched.$NLOG.log"
  fi
  # shellcheck disable=SC2086  # word splitting intended
  start_sched $FEATURES --stats-interval 1 --exit-dump-len 262144 "$@"
}
# died_dump: a daemon that was ejected printed the kernel's reason and debug dump (runnable tasks
# per CPU, DSQs): show it, it is the evidence.
died_dump() {
  echo "----- scx_sis log from its exit on (kernel's reason and debug dump, at most 3000 lines) -----"
  if grep -q 'DEBUG DUMP' "$SCHED_LOG"; then
    sed -n '/DEBUG DUMP/,$p' "$SCHED_LOG" | head -n 3000
  else
    tail -n 40 "$SCHED_LOG"
  fi
  echo "----- end -----"
}
# ensure_sched WHY ARGS...: start a fresh daemon if the previous one died (already failed above).
ensure_sched() {
  _why=$1
  shift
  sched_alive && [ "$(rel_state)" = enabled ] && return 0
  if sched_start "$@"; then
    DAEMON=$SCHED_PID
    info "started a fresh scx_sis $* for $_why (the previous one is gone)"
  else
    fail "${_why}_setup" "$SCHED_START_ERR"
  fi
}
show_line() { tr -s ' \n' ' ' <"$1" | cut -c1-400; }
pin_state() { [ -e "$PIN" ] && echo present || echo absent; }

# bad_start NAME BAD ARGS...: `scx_sis ARGS` must fail as a usage error (rc 2, clap's message
# naming BAD), nothing on stdout, and change nothing: state, ops, pin, the running daemon.
bad_start() {
  _n=$1 _bad=$2
  shift 2
  _st0=$(rel_state) _ops0=$(scx_ops) _pin0=$(pin_state) _alive0=$(sched_alive && echo yes || echo no)
  CAP_OUT=/tmp/bad.out CAP_ERR=/tmp/bad.err run_capped 60 /bin/scx_sis "$@"
  _rc=$?
  _lines=$(wc -l </tmp/bad.err)
  _alive=$(sched_alive && echo yes || echo no)
  _d="scx_sis $* rc=$_rc stdout=$(wc -c </tmp/bad.out)B stderr_lines=$_lines: $(rel_oneline /tmp/bad.err); state $_st0->$(rel_state) pin $_pin0->$(pin_state) daemon alive $_alive0->$_alive"
  if [ $_rc -eq 2 ] && [ ! -s /tmp/bad.out ] &&
    grep -q 'error' /tmp/bad.err && grep -qF -- "$_bad" /tmp/bad.err &&
    [ "$(rel_state)" = "$_st0" ] && [ "$(scx_ops)" = "$_ops0" ] && [ "$(pin_state)" = "$_pin0" ] &&
    [ "$_alive" = "$_alive0" ]; then
    pass "$_n" "$_d"
  else
    fail "$_n" "$_d"
  fi
}

# not_root NAME: scx_sis as user nobody must fail with one line saying it must run as root.
not_root() {
  _st0=$(rel_state) _alive0=$(sched_alive && echo yes || echo no)
  _uid=$(su -s /bin/sh nobody -c 'id -u' 2>&1)
  CAP_OUT=/tmp/nr.out CAP_ERR=/tmp/nr.err run_capped 60 su -s /bin/sh nobody -c '/bin/scx_sis --stats-interval 1'
  _rc=$?
  _lines=$(wc -l </tmp/nr.err)
  _d="as uid $_uid: rc=$_rc stdout=$(wc -c </tmp/nr.out)B stderr_lines=$_lines: $(rel_oneline /tmp/nr.err); state $_st0->$(rel_state) daemon alive $_alive0->$(sched_alive && echo yes || echo no)"
  if [ "$_uid" = 65534 ] && [ $_rc -ne 0 ] && [ $_rc -ne 137 ] && [ "$_lines" -eq 1 ] &&
    grep -q 'must run as root' /tmp/nr.err && [ "$(rel_state)" = "$_st0" ]; then
    pass "$1" "$_d"
  else
    fail "$1" "$_d"
  fi
}

# --------------------------------------------------------------------------- bad input, idle
bad_start start_bad_sis_util_idle cubic --sis-util cubic
bad_start start_bad_threshold_idle 5000 --prev-bias-threshold 5000
bad_start start_bad_slice_idle "'1'" --slice-us 1
not_root not_root_idle

# --------------------------------------------------------------------------- start, all stages on
if sched_start; then
  pass sched_enabled "ops=$(scx_ops) with $FEATURES, enabled after $(fmt_cs "$SCHED_START_CS")s"
else
  fail sched_enabled "$SCHED_START_ERR; log: $(rel_oneline "$SCHED_LOG")"
  finish
fi
DAEMON=$SCHED_PID
info "$(grep -m1 '^policy:' "$SCHED_LOG")"

# --------------------------------------------------------------------------- bad input, running
tune --show
show_rc0=$TUNE_RC
cp "$TUNE_OUT" /tmp/show.before
gen0=$(rel_count 'tunables generation' "$SCHED_LOG")
bad_start start_bad_sis_util_running cubic --sis-util cubic
bad_start start_bad_threshold_running 5000 --prev-bias-threshold 5000
bad_start start_bad_slice_running "'1'" --slice-us 1

# bad_tune NAME BAD ARGS...: `tune ARGS` a usage error (rc 2, clap's message naming BAD), nothing
# on stdout.
bad_tune() {
  _n=$1 _bad=$2
  shift 2
  tune "$@"
  _lines=$(wc -l <"$TUNE_ERR")
  _d="tune $* rc=$TUNE_RC stdout=$(wc -c <"$TUNE_OUT")B stderr_lines=$_lines: $(rel_oneline "$TUNE_ERR")"
  if [ "$TUNE_RC" -eq 2 ] && [ ! -s "$TUNE_OUT" ] &&
    grep -q 'error' "$TUNE_ERR" && grep -qF -- "$_bad" "$TUNE_ERR"; then
    pass "$_n" "$_d"
  else
    fail "$_n" "$_d"
  fi
}
bad_tune tune_bad_sis_util cubic --sis-util cubic
bad_tune tune_bad_threshold 5000 --prev-bias-threshold 5000
bad_tune tune_bad_slice "'1'" --slice-us 1
tune --show
gen1=$(rel_count 'tunables generation' "$SCHED_LOG")
if [ "$show_rc0" -eq 0 ] && [ "$TUNE_RC" -eq 0 ] && [ -s /tmp/show.before ] && cmp -s /tmp/show.before "$TUNE_OUT" &&
  [ "$gen0" = "$gen1" ]; then
  pass bad_input_changed_nothing "tune --show identical before/after 6 bad starts and 3 bad tunes, no 'tunables generation' line logged ($gen0/$gen1): $(show_line "$TUNE_OUT")"
else
  fail bad_input_changed_nothing "rc=$show_rc0/$TUNE_RC generation lines $gen0->$gen1 before: $(show_line /tmp/show.before) after: $(show_line "$TUNE_OUT")"
fi

ops=$(scx_ops)
CAP_OUT=/tmp/second.out CAP_ERR=/tmp/second.err run_capped 60 /bin/scx_sis --stats-interval 10
rc=$?
d="rc=$rc stderr_lines=$(wc -l </tmp/second.err): $(rel_oneline /tmp/second.err); first instance alive=$(sched_alive && echo yes || echo no) state=$(rel_state)"
if [ $rc -ne 0 ] && [ $rc -ne 137 ] && [ -n "$ops" ] && grep -qF -- "$ops" /tmp/second.err &&
  [ "$(wc -l </tmp/second.err)" -eq 1 ] && sched_alive && [ "$(rel_state)" = enabled ]; then
  pass second_instance "$d"
else
  fail second_instance "want rc!=0 and one line naming '$ops'; $d"
fi
not_root not_root_running

# --------------------------------------------------------------------------- load phases
# The stress-ng mix at 2x the CPUs: fork, pipe, futex, schedpolicy, affinity and yield get N/4
# workers each, race-sched 1, cpu the rest.
q=$((N / 4))
[ $q -ge 1 ] || q=1
ncpu=$((2 * N - 6 * q - 1))
[ $ncpu -ge 1 ] || ncpu=1
MIX=${SIS_REL_MIX:-"--cpu $ncpu --fork $q --pipe $q --futex $q --schedpolicy $q --affinity $q --yield $q --race-sched 1"}
# hackbench: 40 tasks per group; more groups than 8x the CPUs needs.
HB_GROUPS=$((8 * N / 40 + 1))

RSS_LOG=/tmp/rel_rss
: >"$RSS_LOG"
rss_sample() { echo "$1=$(rel_rss_kb "$DAEMON")" >>"$RSS_LOG"; }

# affinity NAME: the affinity checks for AFF seconds (while the load runs).
affinity() {
  _an=$1
  _half=$((N / 2))
  rm -f /tmp/rel_ctr_pinned /tmp/rel_ctr_moved
  rel_spinner 0
  _pa=$REL_PID
  rel_spinner $((N - 1))
  _pb=$REL_PID
  rel_sleeper /tmp/rel_ctr_pinned "$_half"
  _pc=$REL_PID
  rel_spinner
  _pd=$REL_PID
  rel_sleeper /tmp/rel_ctr_moved
  _pe=$REL_PID
  sleep 1
  rel_ticks "$_pa"
  _ta0=$REL_TICKS
  rel_ticks "$_pb"
  _tb0=$REL_TICKS
  rel_progress "$_pc" /tmp/rel_ctr_pinned
  _cc0=$REL_PROG
  _dl=$(($(now_cs) + AFF * 100))
  # Masks: single CPUs in both LLCs, each LLC half, a cross-LLC pair, everything.
  _l1="1 $((N - 2)) 0-$((_half - 1)) $_half-$((N - 1)) 2,$((N - 3)) 0 $((N - 1)) 0-$((N - 1))"
  _l2="$((N - 1)) 0-1 $((_half + 1)) 1,$_half $_half-$((N - 1)) 2 0-$((_half - 1)) 0-$((N - 1))"
  # shellcheck disable=SC2086
  rel_mover $_pd $_dl /tmp/rel_mv_run - $_l1 &
  _m1=$!
  # shellcheck disable=SC2086
  rel_mover $_pe $_dl /tmp/rel_mv_sleep /tmp/rel_ctr_moved $_l2 &
  _m2=$!
  rel_sampler $_dl /tmp/rel_smp_pinned "$_pa:0" "$_pb:$((N - 1))" "$_pc:$_half" &
  _s1=$!
  # shellcheck disable=SC2086  # one word per kthread
  rel_sampler $_dl /tmp/rel_smp_kthreads $KTHREADS &
  _s2=$!
  rel_kworker_load $_dl /tmp/rel_kw &
  _k=$!
  wait $_m1 $_m2 $_s1 $_s2 $_k
  rel_ticks "$_pa"
  _ta=$((REL_TICKS - _ta0))
  rel_ticks "$_pb"
  _tb=$((REL_TICKS - _tb0))
  rel_progress "$_pc" /tmp/rel_ctr_pinned
  _cc=$((REL_PROG - _cc0))
  rel_ticks "$_pd"
  _td=$REL_TICKS
  rel_progress "$_pe" /tmp/rel_ctr_moved
  _ce=$REL_PROG
  kill -KILL "$_pa" "$_pb" "$_pc" "$_pd" "$_pe" 2>/dev/null
  wait "$_pa" "$_pb" "$_pc" "$_pd" "$_pe" 2>/dev/null
  # Verdicts in reliability.rs: pinned (progress, every sample on its CPU), moved (no stuck change,
  # only inside the new mask), kthreads (stat_refresh within KW_MAX, only on their CPU).
  rec kv "aff_pinned_$_an" "ta=$_ta tb=$_tb cc=$_cc half=$_half"
  rec kv "smp_pinned_$_an" "$(cat /tmp/rel_smp_pinned)"
  rec kv "mv_run_$_an" "progress=$_td $(cat /tmp/rel_mv_run)"
  rec kv "mv_sleep_$_an" "progress=$_ce $(cat /tmp/rel_mv_sleep)"
  rec kv "kw_$_an" "$(cat /tmp/rel_kw)"
  rec kv "smp_kthreads_$_an" "$(cat /tmp/rel_smp_kthreads)"
}

# load NAME: stress-ng MIX for SECS with the affinity checks in its first AFF s, then hackbench.
load() {
  _ln=$1
  _d0=$(($(dmesg | wc -l) + 1))
  _r0=$(rel_count 'asked for a restart' "$SCHED_LOG")
  /bin/scx_sis monitor --json --interval 5 >/tmp/rel_mon_"$_ln" 2>&1 &
  _mon=$!
  _t0=$(now_cs)
  # shellcheck disable=SC2086
  stress-ng $MIX --timeout "${SECS}s" --metrics-brief >/tmp/rel_stress_"$_ln" 2>&1 &
  _st=$!
  info "load $_ln: stress-ng $MIX --timeout ${SECS}s (pid $_st)"
  sleep 3
  affinity "$_ln"
  _next=$(now_cs)
  while kill -0 $_st 2>/dev/null; do
    if [ "$(now_cs)" -ge "$_next" ]; then
      rss_sample "${_ln}_$(fmt_cs $(($(now_cs) - _t0)) | cut -d. -f1)s"
      _next=$((_next + 3000))
    fi
    sleep 1
  done
  wait $_st
  _src=$?
  rss_sample "${_ln}_end"
  grep -E 'stress-ng: (info|metrc).* (cpu|fork|pipe|futex|schedpolicy|affinity|yield|race-sched) ' \
    "/tmp/rel_stress_$_ln" | sed "s/^/SIS-INFO stress $_ln: /" | head -n 12
  rec kv "stress_$_ln" "rc=$_src wall_cs=$(($(now_cs) - _t0))"
  [ $_src -eq 0 ] || rec text "stress_$_ln" "$(tail -n 5 "/tmp/rel_stress_$_ln" | tr '\n' '|')"
  _ej=$(rel_ejections $_d0)
  _r1=$(rel_count 'asked for a restart' "$SCHED_LOG")
  _d="state=$(rel_state) daemon pid $DAEMON alive=$(sched_alive && echo yes || echo no) ejections=$_ej restarts=$((_r1 - _r0)) ops=$(scx_ops)"
  if [ "$(rel_state)" = enabled ] && sched_alive && [ "$SCHED_PID" = "$DAEMON" ] && [ "$_ej" = 0 ] &&
    [ "$_r1" = "$_r0" ]; then
    pass "survived_$_ln" "$_d"
  else
    fail "survived_$_ln" "$_d"
    sched_alive || died_dump
  fi
  _errs=$(scx_dmesg_errors $_d0)
  if [ -z "$_errs" ]; then
    pass "dmesg_clean_$_ln" "no sched_ext error / stall / BUG / WARNING in dmesg during the load"
  else
    fail "dmesg_clean_$_ln" "$(echo "$_errs" | head -n 3 | tr '\n' '|')"
    echo "----- dmesg of the load from its first WARNING / BUG / stall on (at most 60 lines) -----"
    dmesg | tail -n +"$_d0" | sed -n -E '/WARNING:|BUG:|stall|sched_ext/,$p' | head -n 60
    echo "----- end -----"
  fi
  kill -INT $_mon 2>/dev/null
  rel_wait_exit $_mon 10
  rec_mon "mon_$_ln" "/tmp/rel_mon_$_ln"
  rec kv "mon_${_ln}_rc" "rc=$REL_RC"
  rec_hackbench "hackbench_8x_$_ln" -g $HB_GROUPS -l "$HB_LOOPS"
  info "hackbench_8x_$_ln: $((HB_GROUPS * 40)) tasks on $N CPUs"
}

sleep 2
rss_sample start
RSS0=$(rel_rss_kb "$DAEMON")
RSS_SPAN="2 x ${SECS}s of load"
load features
# For chasing a load-phase failure: stop after the first load.
[ -n "${SIS_REL_FIRST_LOAD_ONLY:-}" ] && finish

if sched_alive && [ "$(rel_state)" = enabled ]; then
  tune --wakeq on
  if [ "$TUNE_RC" -eq 0 ] && wait_log 'wakeq: off -> on' 10; then
    pass wakeq_on "switched live: tune rc=0: $(rel_oneline "$TUNE_OUT"), logged"
  else
    fail wakeq_on "tune rc=$TUNE_RC $(rel_oneline "$TUNE_OUT") $(rel_oneline "$TUNE_ERR")"
  fi
else
  # The first load's daemon is gone (failed above): the second load runs on a fresh one.
  ensure_sched wakeq_load --wakeq on
  tune --show
  if grep -q '^wakeq  *on$' "$TUNE_OUT"; then
    pass wakeq_on "fresh scx_sis --wakeq on (the first load's daemon died): $(show_line "$TUNE_OUT")"
  else
    fail wakeq_on "fresh scx_sis --wakeq on: tune --show rc=$TUNE_RC $(show_line "$TUNE_OUT")"
  fi
  sleep 2
  rss_sample restart
  RSS0=$(rel_rss_kb "$DAEMON")
  RSS_SPAN="the second ${SECS}s load only (the first daemon died)"
fi
load wakeq

# --------------------------------------------------------------------------- RSS
# The daemon's VmRSS from the first sample to now; reliability.rs holds it to 25% + 2 MB.
rec kv rss "pid=$DAEMON start=$RSS0 end=$(rel_rss_kb "$DAEMON") alive=$(sched_alive && echo yes || echo no) span=[$RSS_SPAN] samples=[$(tr '\n' ' ' <"$RSS_LOG")]"

# --------------------------------------------------------------------------- a higher class takes a CPU
# A busy loop free to run anywhere is running on CPU RT_CPU when a SCHED_FIFO hog pinned there
# takes that CPU; every other CPU is idle. EEVDF moves the loop at once (it got 100% here). Left
# queued behind the hog it gets what RT throttling leaves: 9 of 1000 ticks on 6.12 before
# ops.cpu_release. Bound: 80% of the window.
ensure_sched rt_preempt
RT_CPU=1
RT_SECS=10
rel_spinner $RT_CPU
_loop=$REL_PID
sleep 1
taskset -p -c "0-$((N - 1))" "$_loop" >/dev/null
# The monitor window spans the hog's start, when the rescue happens.
/bin/scx_sis monitor --json --interval $((RT_SECS + 3)) --count 1 >/tmp/rel_rt_mon 2>/dev/null &
_mon=$!
sleep 1
chrt -f 50 taskset -c $RT_CPU sh -c 'while :; do :; done' &
_hog=$!
sleep 1
rel_ticks "$_loop"
_t0=$REL_TICKS
_c0=$(now_cs)
sleep $RT_SECS
rel_ticks "$_loop"
_got=$((REL_TICKS - _t0))
_win=$(($(now_cs) - _c0))
rel_cpu "$_loop"
_on=$REL_CPU
kill -KILL "$_hog" "$_loop" 2>/dev/null
wait "$_hog" "$_loop" "$_mon" 2>/dev/null
rec kv rt_preempt "got=$_got win=$_win cpu=$RT_CPU on=$_on state=$(rel_state)"
rec_mon rt_mon /tmp/rel_rt_mon

# --------------------------------------------------------------------------- CPU hotplug
ensure_sched hotplug --wakeq on
ONLINE=/sys/devices/system/cpu/cpu$HCPU/online
STARTS='scx_sis on kernel'
# A live change the command line does not have: the restart must keep it.
tune --prev-bias-threshold 50
info "before the hotplug: tune --prev-bias-threshold 50 rc=$TUNE_RC $(rel_oneline "$TUNE_OUT")$(rel_oneline "$TUNE_ERR")"
tune --show
cp "$TUNE_OUT" /tmp/show.hp0
# hotplug ACTION: echo ACTION > online under load; wait until enabled again after a restart (or, if
# the scheduler never left, until SIS_REL_ENABLE_SECS passed with it enabled throughout).
hotplug() {
  _act=$1 _what=offline
  [ "$_act" = 1 ] && _what=online
  _s0=$(rel_count "$STARTS" "$SCHED_LOG")
  _r0=$(rel_count 'asked for a restart' "$SCHED_LOG")
  _t0=$(now_cs)
  if ! echo "$_act" >"$ONLINE"; then
    fail "hotplug_$_what" "echo $_act > $ONLINE failed"
    return
  fi
  _techo=$(($(now_cs) - _t0))
  _seen_dis=0 _back=
  _dl=$((_t0 + ENABLE_SECS * 100))
  while [ "$(now_cs)" -lt "$_dl" ]; do
    _s=$(rel_state)
    [ "$_s" = enabled ] || _seen_dis=1
    if [ "$_s" = enabled ] && [ "$(rel_count "$STARTS" "$SCHED_LOG")" -gt "$_s0" ]; then
      _back=$(($(now_cs) - _t0))
      break
    fi
    sched_alive || break
    sleep 0.05
  done
  _r1=$(rel_count 'asked for a restart' "$SCHED_LOG")
  _exit=$(grep 'EXIT:' "$SCHED_LOG" | tail -n 1 | cut -c1-160)
  _layout=$(grep "$STARTS" "$SCHED_LOG" | tail -n 1 | sed 's/.*: //')
  _d="cpu$HCPU $_what: echo took $(fmt_cs $_techo)s, state left enabled=$([ $_seen_dis = 1 ] && echo yes || echo no), restarts=$((_r1 - _r0)), back to enabled after $([ -n "$_back" ] && echo "$(fmt_cs "$_back")s" || echo "never (bound ${ENABLE_SECS}s)"); daemon pid $SCHED_PID alive=$(sched_alive && echo yes || echo no); log: '$_exit' then '$_layout'"
  if [ -n "$_back" ] && sched_alive && [ "$SCHED_PID" = "$DAEMON" ] && [ "$_r1" -gt "$_r0" ] &&
    grep -q 'the kernel asked for a restart' "$SCHED_LOG" && echo "$_exit" | grep -q "cpu $HCPU going $_what"; then
    pass "hotplug_$_what" "$_d"
  elif [ -z "$_back" ] && [ $_seen_dis = 0 ] && [ "$(rel_state)" = enabled ] && sched_alive; then
    pass "hotplug_$_what" "handled in place (never left enabled, no restart): $_d"
  else
    fail "hotplug_$_what" "$_d"
  fi
}
if [ -w "$ONLINE" ] && [ "$(cat "$ONLINE")" = 1 ]; then
  start_bg_loop stress-ng --cpu "$N" --fork 2 --pipe 2 --futex 2 --timeout 8s
  sleep 3
  hotplug 0
  info "online CPUs after offline: $(cat /sys/devices/system/cpu/online)"
  sleep 3
  hotplug 1
  sleep 2
  check_bg_loop hotplug_load 60 "stress-ng runs of 8 s across the hotplug"
  rel_spinner "$HCPU"
  _hp=$REL_PID
  sleep 1
  rel_ticks "$_hp"
  _h0=$REL_TICKS
  sleep 3
  rel_ticks "$_hp"
  _h1=$REL_TICKS
  rel_cpu "$_hp"
  _hc=$REL_CPU
  kill -KILL "$_hp"
  wait "$_hp" 2>/dev/null
  rec kv hotplug_cpu_back "online=$(cat "$ONLINE") online_cpus=$(cat /sys/devices/system/cpu/online) ticks=$((_h1 - _h0)) on=$_hc layout=[$(grep "$STARTS" "$SCHED_LOG" | tail -n 1 | sed 's/.*: //')]"
  CAP_OUT=/tmp/hp_mon.out CAP_ERR=/tmp/hp_mon.err run_capped 60 /bin/scx_sis monitor --json --interval 1 --count 1
  rec kv hp_mon_rc "rc=$?"
  rec_mon hp_mon /tmp/hp_mon.out
  rec_mon hp_mon /tmp/hp_mon.err
  # The policy in force before the hotplug (prev-bias-threshold changed live) is the policy after.
  tune --show
  if [ "$TUNE_RC" -eq 0 ] && diff /tmp/show.hp0 "$TUNE_OUT" | grep '^[-+][a-z]' | grep -qv '^[-+]generation'; then
    fail hotplug_policy_kept "the reload changed the live policy: $(diff /tmp/show.hp0 "$TUNE_OUT" | grep '^[-+][a-z]' | tr -s ' \n' ' ')"
  elif [ "$TUNE_RC" -eq 0 ]; then
    pass hotplug_policy_kept "tune --show after the restarts: $(show_line "$TUNE_OUT")"
  else
    fail hotplug_policy_kept "tune --show rc=$TUNE_RC $(rel_oneline "$TUNE_ERR")"
  fi
  info "daemon VmRSS after the hotplug restarts: $(rel_rss_kb "$DAEMON")kB"
else
  fail hotplug_offline "$ONLINE not writable or not 1: $(cat "$ONLINE" 2>&1)"
fi

# --------------------------------------------------------------------------- faults
# Each under a hackbench loop. After each: state disabled, tasks still run (on EEVDF), the daemon
# (where it can) printed the kernel's reason and exited non-zero, no pin left behind by a daemon
# that exited, and a fresh start works.
HB_FAULT="hackbench -g 2 -l 20"
ensure_sched fault
# shellcheck disable=SC2086
start_bg_loop $HB_FAULT

# after_fault NAME WANT_TEXT: the checks after the daemon's exit (REL_RC, REL_EXIT_CS set).
after_fault() {
  _fn=$1 _want=$2
  wait_state disabled 10
  _st=$(rel_state)
  _dm=$(dmesg | grep 'sched_ext: BPF scheduler' | tail -n 1 | sed 's/^\[[^]]*\] *//')
  _last=$(grep -v '^ *$' "$SCHED_LOG" | grep -iE 'exit|error' | tail -n 2 | tr '\n' '|' | cut -c1-300)
  _t0=$(now_cs)
  # shellcheck disable=SC2086
  $HB_FAULT >/tmp/hb_eevdf.out 2>&1
  _hrc=$?
  _hw=$(fmt_cs $(($(now_cs) - _t0)))
  _d="daemon rc=$REL_RC after $(fmt_cs "$REL_EXIT_CS")s, state=$_st, pin $(pin_state), hackbench on EEVDF rc=$_hrc in ${_hw}s; daemon: '$_last' dmesg: '$_dm'"
  if [ "$_st" = disabled ] && [ "$_hrc" -eq 0 ] && { [ -z "$_want" ] || {
    [ "$REL_RC" -ne 0 ] && [ "$REL_RC" -ne 137 ] && grep -qiF -- "$_want" "$SCHED_LOG" && [ "$(pin_state)" = absent ]; }; }; then
    pass "fault_$_fn" "$_d"
  else
    fail "fault_$_fn" "${_want:+want rc!=0 (not 137), \"$_want\" in its output, pin removed; }$_d"
  fi
  cp "$SCHED_LOG" "/tmp/sched.$_fn.log"
  SCHED_PID=
  if sched_start; then
    pass "fault_${_fn}_fresh_start" "state=enabled ops=$(scx_ops) after $(fmt_cs "$SCHED_START_CS")s$(grep -q 'stale pin' "$SCHED_LOG" && echo ', replaced the stale pin')"
  else
    fail "fault_${_fn}_fresh_start" "$SCHED_START_ERR; log: $(rel_oneline "$SCHED_LOG")"
  fi
}

# sysrq-S
sleep 2
echo S >/proc/sysrq-trigger
rel_wait_exit "$SCHED_PID" 20
after_fault sysrq 'sysrq'

# SIGKILL: nothing can print; the kernel unregisters when the last reference goes. The fresh
# instance after it is the one the next fault ends: its environment arms the tests' injection.
sleep 2
kill -KILL "$SCHED_PID"
rel_wait_exit "$SCHED_PID" 20
SCX_SIS_TEST_INJECT_ERROR=2
export SCX_SIS_TEST_INJECT_ERROR
after_fault sigkill ''
unset SCX_SIS_TEST_INJECT_ERROR

# Injected scx_bpf_error() on the next dispatch, 2 s after that instance attached.
rel_wait_exit "$SCHED_PID" 20
after_fault inject 'test-only error injected'
# The fresh instance, started without the variable, outlives the delay that ended the last one.
sleep 4
if sched_alive && [ "$(rel_state)" = enabled ]; then
  pass fault_inject_cleared "the fresh instance still runs 4 s after its start"
else
  fail fault_inject_cleared "state=$(rel_state) alive=$(sched_alive && echo yes || echo no)"
fi

check_bg_loop fault_load 60 "'$HB_FAULT' runs across the three faults"

# --------------------------------------------------------------------------- clean unload
t0=$(now_cs)
stop_sched 20
rc=$?
wait_state disabled 5
d="rc=$rc state=$(rel_state) pin $(pin_state) after $(fmt_cs $(($(now_cs) - t0)))s"
if [ $rc -eq 0 ] && [ "$(rel_state)" = disabled ] && [ "$(pin_state)" = absent ]; then
  pass sigint_unload "$d"
else
  fail sigint_unload "$d"
fi
info "reliability took $(fmt_cs $(($(now_cs) - T_START)))s (SIS_REL_SECS=$SECS)"
if [ "$SIS_FAILS" -ne 0 ]; then
  for f in /tmp/sched.sysrq.log /tmp/sched.sigkill.log /tmp/sched.inject.log; do
    [ -f "$f" ] || continue
    echo "----- $f (last 15 lines) -----"
    grep -v '^ *$' "$f" | grep -v '^ *[0-9]\+ ' | tail -n 15
  done
fi
finish
