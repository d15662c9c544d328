#!/bin/sh
# Placement policies of scx_sis, measured in one boot (issue "Placement policies of the seeds").
#
#   prev_bias_migrations  prev-bias on cuts the migrations of a wakeup-heavy workload: perf stat
#                         cpu-migrations per context switch, medians of alternating on/off runs,
#                         switched live with `scx_sis tune`
#   sis_util_hogs_fill    stress-ng --cpu N on N CPUs gets every CPU >= 90% busy within 8 s
#   sis_util_*            SIS_UTIL curves: an idle LLC is scanned whole; under CPU hogs on every
#                         CPU quadratic stops the scan (nr_scan 0; at most 1 in 50 wakeups
#                         scans), linear keeps 4 CPUs (or the LLC if smaller), off the whole LLC
#   affinity_*            SIS_UTIL's affinity corner case: hogs bound to every
#                         CPU of the LLC but one. Shows what each curve does for unbound tasks
#                         (depth, hit rate, paths) and checks that none of them waits while that
#                         CPU is idle. Needs one LLC with >= 7 CPUs (--topo 1llc); skipped otherwise.
#
# Env: SIS_POL_CHECKS      checks to run, default "prevbias curves affinity"
#      SIS_POL_REPS        runs per setting for prev_bias_migrations, default 5
#      SIS_POL_PB_RATIO    pass if median(migrations/cs) on <= RATIO x off, default 0.75
#      SIS_POL_PB_THRESHOLD  prev-bias threshold (per-mille) for that check, default: scx_sis's
#      SIS_POL_PB_WORKLOAD the workload for it (a command line)
#      SIS_SCHED_ARGS      extra scx_sis arguments
#
# The guest runs the workloads and prints records (SIS-REC); tests/vm/policy.rs judges them: every
# check above. The affinity checks keep the daemon (it wakes every 100 ms) and this shell on CPU 0
# (no hog there), so the one CPU left without a hog is really idle.
. /sis/lib.sh

POL_CHECKS=${SIS_POL_CHECKS:-prevbias curves affinity}
POL_NCPU=$(nproc)
POL_LAST=$((POL_NCPU - 1))
POL_FIFO=/tmp/pol_fifo
POL_MON_PID=
POL_BG=

# --------------------------------------------------------------------------- helpers (pol_*)

# pol_snap NAME SECS: one `monitor --json` report covering SECS seconds, as record NAME (counters
# are deltas over them; cpus, util_pct and nr_scan are gauges at its end).
pol_snap() {
  /bin/scx_sis monitor --json --interval "$2" --count 1 >/tmp/pol_snap.json 2>&1
  rec_mon "$1" /tmp/pol_snap.json
}

# pol_mon_start FILE / pol_mon_stop: a background monitor appending one JSON line per second.
pol_mon_start() {
  /bin/scx_sis monitor --json --interval "${2:-1}" >"$1" 2>/dev/null &
  POL_MON_PID=$!
  sleep 0.3
}
pol_mon_stop() {
  [ -n "$POL_MON_PID" ] || return 0
  kill -TERM "$POL_MON_PID" 2>/dev/null
  wait "$POL_MON_PID" 2>/dev/null
  POL_MON_PID=
}

# pol_tune ARGS: scx_sis tune ARGS; a failure is a failed check of its own.
pol_tune() {
  if ! /bin/scx_sis tune "$@" >/tmp/pol_tune.out 2>&1 && ! grep -q 'nothing to change' /tmp/pol_tune.out; then
    fail tune "scx_sis tune $*: $(tr '\n' ' ' </tmp/pol_tune.out | cut -c1-200)"
    return 1
  fi
}

# pol_probe PID CPU [PID2]: one consistent sample: "uptime_cs task_ticks cpu_idle_ticks run_ns
# wait_ns timeslices last_cpu pid2_ticks" (utime+stime and CPU's idle+iowait in USER_HZ ticks,
# PID's schedstat).
pol_probe() {
  awk -v pid="$1" -v c="cpu$2" -v pid2="${3:-$1}" '
    function ticks(p,   st, f) {
      st = ""; getline st <("/proc/" p "/stat"); close("/proc/" p "/stat")
      sub(/^.*\) /, "", st); split(st, f, " "); T_CPU = f[37]; return f[12] + f[13]
    }
    BEGIN {
    getline u <"/proc/uptime"; split(u, a, " "); split(a[1], b, ".")
    up = b[1] * 100 + substr(b[2] "00", 1, 2)
    t2 = ticks(pid2); t1 = ticks(pid); last = T_CPU
    while ((getline l <"/proc/stat") > 0) { split(l, g, " "); if (g[1] == c) idle = g[5] + g[6] }
    getline ss <("/proc/" pid "/schedstat"); split(ss, h, " ")
    printf "%d %d %d %.0f %.0f %d %d %d\n", up, t1, idle, h[1], h[2], h[3], last, t2 }'
}

# pol_kill PID...: SIGKILL and reap children of this shell.
pol_kill() {
  for _p in "$@"; do kill -KILL "$_p" 2>/dev/null; done
  for _p in "$@"; do wait "$_p" 2>/dev/null; done
}

# pol_cpu_ticks: "cpuN:total:idle" per CPU from /proc/stat in POL_TICKS.
pol_cpu_ticks() {
  POL_TICKS=
  while read -r _c _u _n _s _i _w _q _sq _st _; do
    case $_c in cpu[0-9]*) POL_TICKS="$POL_TICKS $_c:$((_u + _n + _s + _i + _w + _q + _sq + _st)):$((_i + _w))" ;; esac
  done </proc/stat
}
# pol_busy_pct SECS [CPU]: the lowest busy share (percent) of any CPU (or of CPU) over SECS in
# POL_BUSY; 100 for a CPU that counted no tick.
pol_busy_pct() {
  pol_cpu_ticks
  _b0=$POL_TICKS
  sleep "$1"
  pol_cpu_ticks
  POL_BUSY=100
  for _e in $POL_TICKS; do
    [ -n "${2:-}" ] && [ "${_e%%:*}" != "cpu$2" ] && continue
    for _f in $_b0; do
      [ "${_f%%:*}" = "${_e%%:*}" ] || continue
      _t=${_e#*:} _t0=${_f#*:}
      _dt=$((${_t%:*} - ${_t0%:*})) _di=$((${_t#*:} - ${_t0#*:}))
      [ "$_dt" -gt 0 ] && [ $((100 - _di * 100 / _dt)) -lt "$POL_BUSY" ] && POL_BUSY=$((100 - _di * 100 / _dt))
    done
  done
}

# pol_wait_idle CPU: until CPU was >= 80% idle over half a second (at most 10 s). Work the checks
# before left behind (an unbound kworker freeing a killed stress-ng's memory ran on it for 2 s)
# must not stand in for a placement failure. Sets POL_IDLE_WAIT (cs waited).
pol_wait_idle() {
  _wt0=$(now_cs)
  while [ $(($(now_cs) - _wt0)) -lt 1000 ]; do
    pol_busy_pct 0.5 "$1"
    [ "$POL_BUSY" -le 20 ] && break
  done
  POL_IDLE_WAIT=$(($(now_cs) - _wt0))
}

# pol_top SECS [N]: the N (12) tasks that used most CPU over SECS: ticks pid (comm) state cpuN.
pol_topsnap() {
  for _f in /proc/[0-9]*/stat; do read -r _l 2>/dev/null <"$_f" && echo "$_l"; done |
    awk '{ c = $2; n = 2; while (c !~ /\)$/) { n++; c = c "_" $n } print $1, c, $(n + 1), $(n + 37), $(n + 12) + $(n + 13) }'
}
# pol_ticks_on CPU PID SNAP0 SNAP1: the tasks other than PID last seen on CPU that ran between two
# pol_topsnap snapshots, as "ticks:pid:comm", most first, at most 4.
pol_ticks_on() {
  awk -v c="$1" -v me="$2" 'NR == FNR { t[$1] = $5; next }
    $4 == c && $1 != me { d = $5 - ($1 in t ? t[$1] : 0); if (d > 0) print d ":" $1 ":" $2 }' "$3" "$4" |
    sort -t: -k1,1 -rn | head -n 4 | tr '\n' ' '
}
pol_top() {
  pol_topsnap >/tmp/pol_top0
  sleep "$1"
  pol_topsnap >/tmp/pol_top1
  awk 'NR == FNR { t[$1] = $5; next } { d = $5 - ($1 in t ? t[$1] : 0); if (d > 0) print d, $1, $2, $3, "cpu" $4 }' \
    /tmp/pol_top0 /tmp/pol_top1 | sort -rn | head -n "${2:-12}"
}

pol_want() { case " $POL_CHECKS " in *" $1 "*) return 0 ;; esac; return 1; }

# --------------------------------------------------------------------------- 1. prev-bias
# Records: kv pb_params; per run kv pb_run, text pb_perf_I_PB (perf's CSV), text pb_out_I_PB (the
# workload's last lines), mon pb_mon_I_PB (one object a second over the run).

check_prev_bias() {
  _wl=${SIS_POL_PB_WORKLOAD:-/bin/scx_sis_lab wakelat --message-threads 1 --workers 4 --cputime-us 20 --sleep-us 200 --runtime 2 --warmup 0.3 --json}
  _reps=${SIS_POL_REPS:-5}
  if [ -n "${SIS_POL_PB_THRESHOLD:-}" ]; then
    pol_tune --prev-bias-threshold "$SIS_POL_PB_THRESHOLD" || return
  fi
  _thr=$(/bin/scx_sis tune --show 2>/dev/null | grep -i 'threshold' | tr -s ' ' | tr '\n' ' ')
  info "prev_bias: workload '$_wl', $_reps runs per setting, alternating; $_thr"
  rec kv pb_params "reps=$_reps max=${SIS_POL_PB_RATIO:-0.75}"
  _i=0
  while [ $_i -lt "$_reps" ]; do
    _i=$((_i + 1))
    if [ $((_i % 2)) = 1 ]; then _order="on off"; else _order="off on"; fi
    for _pb in $_order; do
      pol_tune --prev-bias "$_pb" || return
      pol_mon_start /tmp/pol_pb.json 1
      _t0=$(now_cs)
      # shellcheck disable=SC2086  # the workload is a command line
      perf stat -x, -o /tmp/pol_perf.csv -e cpu-migrations,context-switches -- $_wl >/tmp/pol_cmd.out 2>&1
      _rc=$?
      _t1=$(now_cs)
      pol_mon_stop
      rec kv pb_run "i=$_i pb=$_pb rc=$_rc wall_cs=$((_t1 - _t0))"
      rec_lines text "pb_perf_${_i}_$_pb" /tmp/pol_perf.csv
      rec text "pb_out_${_i}_$_pb" "$(tail -n 2 /tmp/pol_cmd.out | tr '\n' ' ' | cut -c1-200)"
      rec_mon "pb_mon_${_i}_$_pb" /tmp/pol_pb.json
    done
  done
  pol_tune --prev-bias on
}

# --------------------------------------------------------------------------- 2. SIS_UTIL curves
# Records: mon curve_idle (quadratic, nothing running), then under hogs curve_quadratic,
# curve_linear, curve_off; kv curve_hogs (how long the hogs took to fill the CPUs).

check_curves() {
  pol_tune --sis-util quadratic || return
  sleep 0.5
  pol_snap curve_idle 1

  # CPU hogs on every CPU at nice 19 (utilization counts time, not weight; the tools stay quick),
  # plus a task that wakes every 10 ms without forking, so wakeups reach llc_scan.
  nice -n 19 stress-ng --cpu "$POL_NCPU" --timeout 600s >/tmp/pol_stress.out 2>&1 &
  _spid=$!
  sh -c "exec 3<>$POL_FIFO; while :; do read -t 0.01 x <&3; done" &
  _lpid=$!
  POL_BG="$_spid $_lpid"
  # Until every CPU is >= 90% busy (at most 8 s): /proc/stat, so the guest reads no JSON.
  _k=0
  while :; do
    pol_busy_pct 1
    _k=$((_k + 1))
    [ "$POL_BUSY" -ge 90 ] && break
    [ $_k -ge 8 ] && break
  done
  rec kv curve_hogs "windows=$_k min_busy_pct=$POL_BUSY cpus=$POL_NCPU"

  pol_snap curve_quadratic 2
  pol_tune --sis-util linear && sleep 0.5
  pol_snap curve_linear 2
  pol_tune --sis-util off && sleep 0.5
  pol_snap curve_off 2

  pol_tune --sis-util quadratic
  # SIGTERM, so that stress-ng stops and reaps its workers before the next check, which needs
  # a CPU left idle; SIGKILL would leave them to exit on their own.
  kill -TERM "$_spid" 2>/dev/null
  wait "$_spid" 2>/dev/null
  pol_kill "$_lpid"
  POL_BG=
  grep -q 'successful run\|dispatching hogs' /tmp/pol_stress.out ||
    info "stress-ng: $(tail -n 3 /tmp/pol_stress.out | tr '\n' ' ')"
}

# --------------------------------------------------------------------------- 3. affinity corner case
# Records: kv aff_params; per curve kv aff_wake_CURVE and aff_busy_CURVE (pol_probe's samples
# before and after each window, p0 and p1), mon aff_mon_CURVE (the waking task's window).

check_affinity() {
  _cl=$(cat /sys/devices/system/cpu/cpu0/cache/index3/shared_cpu_list 2>/dev/null)
  if [ "$_cl" != "0-$POL_LAST" ] || [ "$POL_NCPU" -lt 7 ]; then
    info "affinity: skipped, needs one LLC of >= 7 CPUs (cpu0's LLC: '$_cl', $POL_NCPU CPUs; use --topo 1llc)"
    return
  fi
  _hk=0 _start=2 _idle=$POL_LAST _all=0-$POL_LAST
  # Housekeeping on CPU $_hk: the daemon, this shell and the tools it starts (see the top).
  taskset -a -pc $_hk "$SCHED_PID" >/dev/null
  taskset -pc $_hk $$ >/dev/null
  _hogs='' _shog=''
  _c=1
  while [ $_c -lt $_idle ]; do
    taskset -c $_c sh -c 'while :; do :; done' &
    _hogs="$_hogs $!"
    [ $_c = $_start ] && _shog=$!
    _c=$((_c + 1))
  done
  POL_BG=$_hogs
  sleep 1.5
  [ "${SIS_POL_DEBUG:-0}" = 1 ] && pol_top 3 | sed 's/^/SIS-INFO top: /'
  info "affinity: busy loops bound to CPUs 1-$((_idle - 1)), the daemon and this shell on CPU $_hk, CPU $_idle idle; unbound tasks start on CPU $_start"
  rec kv aff_params "start=$_start idle=$_idle"

  for _curve in off linear quadratic; do
    pol_tune --sis-util $_curve || continue
    sleep 0.3
    pol_wait_idle $_idle
    [ "$POL_IDLE_WAIT" -gt 60 ] && info "affinity $_curve: waited $(fmt_cs "$POL_IDLE_WAIT")s for CPU $_idle to idle"

    # (a) a task waking every 10 ms for a little work (no fork), started on hog CPU $_start.
    taskset -c $_start sh -c "exec 3<>$POL_FIFO; while :; do i=0; while [ \$i -lt 5 ]; do i=\$((i + 1)); done; read -t 0.01 x <&3; done" &
    _wp=$!
    sleep 0.2
    taskset -pc $_all $_wp >/dev/null
    pol_topsnap >/tmp/pol_aff_top0
    _p0=$(pol_probe $_wp $_idle "$_shog")
    /bin/scx_sis monitor --json --interval 2 --count 1 >/tmp/pol_aff.json 2>&1
    _p1=$(pol_probe $_wp $_idle "$_shog")
    pol_topsnap >/tmp/pol_aff_top1
    pol_kill $_wp
    # Whatever else ran on the CPU meant to stay idle (ticks, pid and comm), for the verdict.
    _others=$(pol_ticks_on $_idle $_wp /tmp/pol_aff_top0 /tmp/pol_aff_top1)
    rec kv "aff_wake_$_curve" "p0=[$_p0] p1=[$_p1] others=[$_others]"
    rec_mon "aff_mon_$_curve" /tmp/pol_aff.json

    # (b) a CPU-bound loop started on hog CPU $_start, then unbound: it must end up on CPU $_idle.
    taskset -c $_start sh -c 'while :; do :; done' &
    _bp=$!
    sleep 0.2
    taskset -pc $_all $_bp >/dev/null
    sleep 0.5
    _p0=$(pol_probe $_bp $_idle "$_shog")
    if [ "${SIS_POL_DEBUG:-0}" = 1 ]; then pol_top 2 8 | sed 's/^/SIS-INFO top: /'; else sleep 2; fi
    _p1=$(pol_probe $_bp $_idle "$_shog")
    pol_kill $_bp
    rec kv "aff_busy_$_curve" "p0=[$_p0] p1=[$_p1]"
  done

  pol_tune --sis-util quadratic
  # shellcheck disable=SC2086  # a list of PIDs
  pol_kill $POL_BG
  POL_BG=
  taskset -a -pc $_all "$SCHED_PID" >/dev/null
  taskset -pc $_all $$ >/dev/null
}

# --------------------------------------------------------------------------- main

info "uname -r: $(uname -r), topology ${SIS_TOPO:-?}, checks: $POL_CHECKS"
if [ ! -f "$SCX_DIR/state" ] || [ ! -x /bin/scx_sis ]; then
  fail sched_ext_available "$SCX_DIR/state or /bin/scx_sis missing"
  finish
fi
mkfifo "$POL_FIFO" 2>/dev/null
dmesg_lines0=$(dmesg | wc -l)
t_start=$(now_cs)
# shellcheck disable=SC2086
if ! start_sched ${SIS_SCHED_ARGS:-}; then
  fail sched_enabled "$SCHED_START_ERR; last log line: $(tail -n 1 "$SCHED_LOG" | cut -c1-200)"
  finish
fi
info "scx_sis enabled after $(fmt_cs "$SCHED_START_CS")s: $(/bin/scx_sis tune --show 2>/dev/null | tr -s ' ' | tr '\n' ';' | cut -c1-300)"
sleep 2

for c in curves prevbias affinity; do
  pol_want $c || continue
  t0=$(now_cs)
  case $c in
    curves) check_curves ;;
    prevbias) check_prev_bias ;;
    affinity) check_affinity ;;
  esac
  pol_mon_stop
  # shellcheck disable=SC2086  # a list of PIDs
  [ -n "$POL_BG" ] && pol_kill $POL_BG && POL_BG=
  info "$c took $(fmt_cs $(($(now_cs) - t0)))s"
done

state=$(scx_state)
errs=$(scx_dmesg_errors $((dmesg_lines0 + 1)))
if [ "$state" = enabled ] && sched_alive && [ -z "$errs" ]; then
  pass policy_sched_survived "state=enabled, scx_sis alive, dmesg clean after $(fmt_cs $(($(now_cs) - t_start)))s"
else
  fail policy_sched_survived "state=$state alive=$(sched_alive && echo yes || echo no) dmesg: $(echo "$errs" | head -n 3 | tr '\n' '|')"
fi
stop_sched 20 || fail policy_unload "scx_sis exited rc=$?"
finish
