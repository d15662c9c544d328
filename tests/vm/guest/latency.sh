#!/bin/sh
# Latency for the woken and the new, against EEVDF in the same boot: under each background load
# that keeps every CPU busy, cyclictest (SCHED_OTHER), a shell that forks short sleeps, ten 50 ms
# sleeps in a row, new processes (`scx_sis --version`, a fork and exec of a binary of some 10 MB),
# and the per-CPU kernel threads' wait; under scx_sis also a stats request (`monitor --json
# --count 1`) against its time on the idle machine. In the first round, a fork storm beside busy
# loops. Beside cyclictest's own latency, the kernel's account of what its thread waited runnable
# (schedstat's run_delay, the same code under EEVDF and sched_ext), and a SCHED_FIFO cyclictest,
# which no sched_ext scheduler schedules: its latency is the timer's delivery plus an RT switch, the
# part of cyclictest's reading a placement cannot change. Rounds alternate which side runs first,
# so a drift over the boot falls on both. tests/vm/latency.rs judges the records.
# Env: SIS_LAT_ROUNDS (default 3), SIS_LAT_LOOPS (cyclictest loops, default 300),
#      SIS_LAT_FORKS (the forking shell's sleeps, default 100), SIS_LAT_SPAWNS (new processes
#      started one after another, default 3: one start's time swings several-fold under the load),
#      SIS_LAT_BGS (the backgrounds, default "long loop"): long is one run that outlasts the
#      probes and is killed after them, as a user's long job (SIS_HACKBENCH_ARGS, default
#      -g G -T -l 1000000); loop is process-mode hackbench restarted in a loop (-g G -l 200), a
#      load whose tasks keep starting and ending; G is one group per 4 CPUs, at least 1.
. /sis/lib.sh

rounds=${SIS_LAT_ROUNDS:-3}
loops=${SIS_LAT_LOOPS:-300}
forks=${SIS_LAT_FORKS:-100}
spawns=${SIS_LAT_SPAWNS:-3}
ncpu=$(nproc)
groups=$(((ncpu + 3) / 4))
hb_args=${SIS_HACKBENCH_ARGS:--g $groups -T -l 1000000}
bgs=${SIS_LAT_BGS:-long loop}
guest_open

# cyclic [-p PRIO]: cyclictest, one thread, $loops loops of 10 ms, its output in /tmp/cyc.out;
# killed after 300 s. Sets CYC_RC, and CYC_WAIT to "wait_ns=N runs=N" from its measuring thread's
# /proc schedstat (run_delay, the time it waited runnable, and its runs), last read while it ran:
# the thread's numbers go with it when it exits. -v prints one line per loop: "thread: loop:
# latency-us". Without -p: SCHED_OTHER, as a user's task.
cyclic() {
  cyclictest -m -q -v -i 10000 -l "$loops" -t 1 "$@" >/tmp/cyc.out 2>&1 &
  _cp=$!
  _c0=$(now_cs)
  CYC_WAIT=
  while kill -0 "$_cp" 2>/dev/null && [ $(($(now_cs) - _c0)) -lt 30000 ]; do
    for _f in /proc/"$_cp"/task/*/schedstat; do
      [ "$_f" = "/proc/$_cp/task/$_cp/schedstat" ] && continue
      # shellcheck disable=SC2034  # _ran: the first field, not used
      read -r _ran _delay _runs <"$_f" 2>/dev/null && CYC_WAIT="wait_ns=$_delay runs=$_runs"
    done
    sleep 0.5
  done
  kill -KILL "$_cp" 2>/dev/null
  wait "$_cp"
  CYC_RC=$?
}

# cyc_stats PREFIX: cyclictest's n, avg, p99 and max (us) from /tmp/cyc.out, as PREFIXn=.. words.
cyc_stats() {
  awk '$1 ~ /^[0-9]+:$/ && $2 ~ /^[0-9]+:$/ { print $3 }' /tmp/cyc.out | sort -n |
    awk -v p="$1" '{ v[NR] = $1; s += $1 } END {
      if (NR == 0) { printf "%sn=0", p; exit }
      i = int(NR * 0.99 + 0.999999); if (i > NR) i = NR
      printf "%sn=%d %savg=%d %sp99=%d %smax=%d", p, NR, p, s / NR, p, v[i], p, v[NR] }'
}

# kthread_waits: "PID run_delay runs" for each per-CPU kernel thread (kworker/N:M, ksoftirqd/N),
# from its schedstat.
kthread_waits() {
  for _d in /proc/[0-9]*; do
    read -r _comm 2>/dev/null <"$_d/comm" || continue
    case $_comm in
      kworker/[0-9]*:* | ksoftirqd/*)
        # shellcheck disable=SC2034  # _ran: the first field, not used
        read -r _ran _delay _runs 2>/dev/null <"$_d/schedstat" && echo "${_d#/proc/} $_delay $_runs" ;;
    esac
  done
}

# kthread_delta BEFORE AFTER: "kthr_wait_ns=N kthr_runs=N", the growth of the threads in both.
kthread_delta() {
  awk 'NR == FNR { d[$1] = $2; r[$1] = $3; next }
    ($1 in d) { w += $2 - d[$1]; n += $3 - r[$1] }
    END { printf "kthr_wait_ns=%d kthr_runs=%d", w, n }' "$1" "$2"
}

# fork_shell: a shell that forks $forks short sleeps, as a script does; prints its own run_delay and
# runs (schedstat) as "sh_wait_ns=N sh_runs=N".
fork_shell() {
  sh -c 'i=0; while [ $i -lt "$1" ]; do busybox usleep 5000; i=$((i + 1)); done
    read -r _a _b _c </proc/$$/schedstat; echo "sh_wait_ns=$_b sh_runs=$_c"' sh "$forks"
}

# bg_start NAME: the background load NAME (SIS_LAT_BGS); sets _hb, its pid.
bg_start() {
  case $1 in
    # shellcheck disable=SC2086
    long) hackbench $hb_args >/dev/null 2>&1 & ;;
    loop) sh -c "while :; do hackbench -g $groups -l 200 >/dev/null 2>&1; done" & ;;
  esac
  _hb=$!
}

# bg_stop NAME: ends it. A restarting loop's hackbench processes go with it: the loop is killed
# first, then every hackbench left.
bg_stop() {
  kill -KILL "$_hb" 2>/dev/null
  wait "$_hb" 2>/dev/null
  if [ "$1" = loop ]; then
    # shellcheck disable=SC2046
    kill -KILL $(pidof hackbench) 2>/dev/null
    sleep 1
  fi
}

# The probes, with the background load already running. Records (kv) lat_SIDE: cyclictest's
# n, avg, p99 and max (us) and its thread's wait (wait_ns, runs), the SCHED_FIFO control's
# (fifo_n, fifo_avg, ...), the sleeps' and the spawns' wall time (centiseconds), the window's
# length, and whether hackbench was still running at its end (hb_alive: the load covered it).
probe() {
  _side=$1 _bg=$2
  bg_start "$_bg"
  sleep 2
  kthread_waits >/tmp/kthr.0
  _w0=$(now_cs)
  cyclic
  _crc=$CYC_RC
  _cyc="$(cyc_stats '') ${CYC_WAIT:-wait_ns=0 runs=0}"
  cyclic -p 99
  _fcrc=$CYC_RC
  _fifo=$(cyc_stats fifo_)
  _sh=$(fork_shell)
  _t0=$(now_cs)
  _i=0
  while [ $_i -lt 10 ]; do
    sleep 0.05
    _i=$((_i + 1))
  done
  _sleeps=$(($(now_cs) - _t0))
  _t0=$(now_cs)
  _src=0 _i=0
  while [ $_i -lt "$spawns" ]; do
    /bin/scx_sis --version >/dev/null 2>&1 || _src=$?
    _i=$((_i + 1))
  done
  _spawn=$(($(now_cs) - _t0))
  _stats=
  if [ "$_side" = sis ]; then
    _t0=$(now_cs)
    /bin/scx_sis monitor --json --count 1 >/dev/null 2>&1
    _stats="stats_rc=$? stats_cs=$(($(now_cs) - _t0))"
  fi
  _w1=$(now_cs)
  kthread_waits >/tmp/kthr.1
  kill -0 "$_hb" 2>/dev/null && _alive=1 || _alive=0
  bg_stop "$_bg"
  rec kv "lat_$_side" "round=$_round bg=$_bg crc=$_crc $_cyc fifo_rc=$_fcrc $_fifo ${_sh:-sh_runs=0} sleeps_cs=$_sleeps spawns=$spawns spawn_cs=$_spawn spawn_rc=$_src $_stats $(kthread_delta /tmp/kthr.0 /tmp/kthr.1) hb_alive=$_alive window_cs=$((_w1 - _w0))"
}

# probes SIDE: the probes under each background.
probes() {
  for _b in $bgs; do
    probe "$1" "$_b"
  done
}

# A fork storm beside tasks already running: a busy loop per CPU, while stress-ng forks as many
# children, which exit at once. Record (kv) forks_SIDE: the loops' CPU ticks and the window's
# (their share of the machine is ticks over window times CPUs), and stress-ng's rc.
fork_storm() {
  _side=$1 _pids=
  _c=0
  while [ $_c -lt "$ncpu" ]; do
    sh -c 'while :; do :; done' &
    _pids="$_pids $!"
    _c=$((_c + 1))
  done
  sleep 1
  # shellcheck disable=SC2086
  ticks_of $_pids
  _t0=$(echo "$TICKS_OF" | awk '{ for (i = 1; i <= NF; i++) s += $i; print s }')
  _c0=$(now_cs)
  CAP_OUT=/tmp/fork.out run_capped 60 stress-ng --fork "$ncpu" --timeout 8s
  _frc=$?
  # shellcheck disable=SC2086
  ticks_of $_pids
  _t1=$(echo "$TICKS_OF" | awk '{ for (i = 1; i <= NF; i++) s += $i; print s }')
  _c1=$(now_cs)
  # shellcheck disable=SC2086
  kill -KILL $_pids 2>/dev/null
  # The loops only: a bare wait would wait for the scheduler this shell started as well.
  # shellcheck disable=SC2086
  wait $_pids 2>/dev/null
  rec kv "forks_$_side" "rc=$_frc loop_ticks=$((_t1 - _t0)) window_cs=$((_c1 - _c0)) cpus=$ncpu"
}

# One scx_sis side: its own scheduler for the round, a stats request on the idle machine (the
# bar for the same request under the load), and a monitor window over the probes.
sis_side() {
  if ! start_sched --stats-interval 60; then
    fail "sched_enabled_$_round" "$SCHED_START_ERR"
    return
  fi
  _t0=$(now_cs)
  /bin/scx_sis monitor --json --count 1 >/dev/null 2>&1
  rec kv stats_idle "round=$_round rc=$? cs=$(($(now_cs) - _t0)) cpus=$ncpu"
  /bin/scx_sis monitor --json --interval 3600 --count 1 >/tmp/mon.json 2>&1 &
  _mon=$!
  sleep 1
  probes sis
  kill -INT "$_mon" 2>/dev/null
  wait "$_mon"
  rec_mon "mon_$_round" /tmp/mon.json
  [ "$_round" -eq 1 ] && fork_storm sis
  stop_sched || fail "unload_$_round" "scx_sis exited with rc $?"
}

_round=1
while [ "$_round" -le "$rounds" ]; do
  if [ $((_round % 2)) -eq 1 ]; then
    probes eevdf
    [ "$_round" -eq 1 ] && fork_storm eevdf
    sis_side
  else
    sis_side
    probes eevdf
  fi
  _round=$((_round + 1))
done

guest_close dmesg_clean
finish
