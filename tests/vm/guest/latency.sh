#!/bin/sh
# Latency for the woken and the new, against EEVDF in the same boot: under a hackbench loop that
# keeps every CPU busy, cyclictest (SCHED_OTHER), ten 50 ms sleeps in a row and a new process
# (`scx_sis --version`, a fork and exec of a binary of some 10 MB); in the first round, a fork
# storm beside busy loops. Beside cyclictest's own latency, the kernel's account of what its
# thread waited runnable (schedstat's run_delay, the same code under EEVDF and sched_ext), and a
# SCHED_FIFO cyclictest, which no sched_ext scheduler schedules: its latency is the timer's
# delivery plus an RT switch, the part of cyclictest's reading a placement cannot change. Rounds alternate which side runs first, so a drift over the boot falls
# on both. tests/vm/latency.rs judges the records.
# Env: SIS_LAT_ROUNDS (default 3), SIS_LAT_LOOPS (cyclictest loops, default 300),
#      SIS_HACKBENCH_ARGS (the background load: one run that outlasts the probes and is killed
#      after them, as a user's long job; default -g 2 -T -l 1000000).
. /sis/lib.sh

rounds=${SIS_LAT_ROUNDS:-3}
loops=${SIS_LAT_LOOPS:-300}
hb_args=${SIS_HACKBENCH_ARGS:--g 2 -T -l 1000000}
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

# The probes, with the background load already running. Records (kv) lat_SIDE: cyclictest's
# n, avg, p99 and max (us) and its thread's wait (wait_ns, runs), the SCHED_FIFO control's
# (fifo_n, fifo_avg, ...), the sleeps' and the spawn's wall time (centiseconds), the window's
# length, and whether hackbench was still running at its end (hb_alive: the load covered it).
probe() {
  _side=$1
  # shellcheck disable=SC2086
  hackbench $hb_args >/dev/null 2>&1 &
  _hb=$!
  sleep 2
  _w0=$(now_cs)
  cyclic
  _crc=$CYC_RC
  _cyc="$(cyc_stats '') ${CYC_WAIT:-wait_ns=0 runs=0}"
  cyclic -p 99
  _fcrc=$CYC_RC
  _fifo=$(cyc_stats fifo_)
  _t0=$(now_cs)
  _i=0
  while [ $_i -lt 10 ]; do
    sleep 0.05
    _i=$((_i + 1))
  done
  _sleeps=$(($(now_cs) - _t0))
  _t0=$(now_cs)
  /bin/scx_sis --version >/dev/null 2>&1
  _src=$?
  _spawn=$(($(now_cs) - _t0))
  _w1=$(now_cs)
  kill -0 "$_hb" 2>/dev/null && _alive=1 || _alive=0
  # hackbench -T is one process: its threads go with it.
  kill -KILL "$_hb" 2>/dev/null
  wait "$_hb" 2>/dev/null
  rec kv "lat_$_side" "round=$_round crc=$_crc $_cyc fifo_rc=$_fcrc $_fifo sleeps_cs=$_sleeps spawn_cs=$_spawn spawn_rc=$_src hb_alive=$_alive window_cs=$((_w1 - _w0))"
}

# A fork storm beside tasks already running: 8 busy loops, one per CPU, while stress-ng forks
# children that exit at once. Record (kv) forks_SIDE: the loops' CPU ticks over the window's
# ticks times 8 (their share of the machine), and stress-ng's rc.
fork_storm() {
  _side=$1 _pids=
  for _c in 0 1 2 3 4 5 6 7; do
    sh -c 'while :; do :; done' &
    _pids="$_pids $!"
  done
  sleep 1
  # shellcheck disable=SC2086
  ticks_of $_pids
  _t0=$(echo "$TICKS_OF" | awk '{ for (i = 1; i <= NF; i++) s += $i; print s }')
  _c0=$(now_cs)
  CAP_OUT=/tmp/fork.out run_capped 60 stress-ng --fork 8 --timeout 8s
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
  rec kv "forks_$_side" "rc=$_frc loop_ticks=$((_t1 - _t0)) window_cs=$((_c1 - _c0))"
}

# One scx_sis side: its own scheduler for the round, and a monitor window over the probes.
sis_side() {
  if ! start_sched --stats-interval 60; then
    fail "sched_enabled_$_round" "$SCHED_START_ERR"
    return
  fi
  /bin/scx_sis monitor --json --interval 3600 --count 1 >/tmp/mon.json 2>&1 &
  _mon=$!
  sleep 1
  probe sis
  kill -INT "$_mon" 2>/dev/null
  wait "$_mon"
  rec_mon "mon_$_round" /tmp/mon.json
  [ "$_round" -eq 1 ] && fork_storm sis
  stop_sched || fail "unload_$_round" "scx_sis exited with rc $?"
}

_round=1
while [ "$_round" -le "$rounds" ]; do
  if [ $((_round % 2)) -eq 1 ]; then
    probe eevdf
    [ "$_round" -eq 1 ] && fork_storm eevdf
    sis_side
  else
    sis_side
    probe eevdf
  fi
  _round=$((_round + 1))
done

guest_close dmesg_clean
finish
