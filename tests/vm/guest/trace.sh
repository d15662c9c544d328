#!/bin/sh
# The placement trace (scx_sis trace): traces of perf bench sched pipe and of hackbench, a trace
# filtered to one process and one to a comm, the trace switched off afterwards (no record
# written), and a trace larger than a small ring buffer (drops reported, the file still whole).
# Each trace's JSON report and the trace-check of its file are records that tests/vm/trace.rs
# judges against the scheduler's counters over the same window.
# Env: SIS_HACKBENCH_ARGS (default -g 2 -l 60), SIS_PIPE_LOOPS (default 5000).
. /sis/lib.sh

hb_args=${SIS_HACKBENCH_ARGS:--g 2 -l 60}
pipe_loops=${SIS_PIPE_LOOPS:-5000}
guest_open
guest_start --stats-interval 60

# traced NAME TRACE-ARGS -- CMD...: trace while CMD runs. The trace starts first and is stopped
# (SIGINT) once CMD is done, so the workload lies inside the window and the counters read at
# its edges see only what the idle machine does in between. Records: json trace_NAME (the
# report), json check_NAME (scx_sis_lab trace-check of the file).
traced() {
  _name=$1
  shift
  _targs=
  while [ "$1" != -- ]; do _targs="$_targs $1"; shift; done
  shift
  # shellcheck disable=SC2086
  /bin/scx_sis trace --duration 600 --json -o "/tmp/$_name.json" $_targs >"/tmp/$_name.sum" 2>"/tmp/$_name.err" &
  _tp=$!
  wait_trace_on
  "$@" >"/tmp/$_name.wl" 2>&1
  _wrc=$?
  sleep 0.5
  kill -INT "$_tp"
  wait "$_tp"
  _trc=$?
  if [ $_wrc -eq 0 ]; then
    pass "workload_$_name" "$* rc=0"
  else
    fail "workload_$_name" "$* rc=$_wrc: $(tail -n 3 "/tmp/$_name.wl" | tr '\n' ' ')"
  fi
  if [ $_trc -eq 0 ] && [ -s "/tmp/$_name.sum" ]; then
    pass "trace_$_name" "$(grep -m1 'records in' "/tmp/$_name.err") file=$(wc -c <"/tmp/$_name.json")B"
    rec json "trace_$_name" "$(cat "/tmp/$_name.sum")"
  else
    fail "trace_$_name" "rc=$_trc: $(tail -n 3 "/tmp/$_name.err" | tr '\n' ' ')"
  fi
  /bin/scx_sis_lab trace-check "/tmp/$_name.json" >"/tmp/$_name.chk" 2>&1
  rec json "check_$_name" "$(head -n 1 "/tmp/$_name.chk")"
}

traced pipe -- perf bench sched pipe -l "$pipe_loops"
# shellcheck disable=SC2086
traced hackbench --svg /tmp/hackbench.svg -- hackbench $hb_args
if head -c 200 /tmp/hackbench.svg | grep -q '<svg' && grep -q '<rect' /tmp/hackbench.svg; then
  pass svg "$(wc -c </tmp/hackbench.svg) bytes, $(grep -o '<rect' /tmp/hackbench.svg | wc -l) rects"
else
  fail svg "not an SVG with runs: $(head -c 200 /tmp/hackbench.svg 2>&1)"
fi

# One process (perf bench's threaded pipe: one tgid) while hackbench runs beside it.
perf bench sched pipe -T -l $((pipe_loops * 2)) >/tmp/pipe_t.out 2>&1 &
pp=$!
rec kv pid_filter "pid=$pp"
# shellcheck disable=SC2086
traced pid --pid "$pp" -- hackbench $hb_args
wait "$pp"
# shellcheck disable=SC2086
traced comm --comm hackbench -- sh -c "hackbench $hb_args && perf bench sched pipe -l $pipe_loops"

# Off again: the tunable says so and a pipe run writes no record.
if /bin/scx_sis tune --show | grep -q '^trace  *off'; then
  pass trace_off "tune --show: $(/bin/scx_sis tune --show | grep '^trace')"
else
  fail trace_off "tune --show: $(/bin/scx_sis tune --show | grep '^trace')"
fi
/bin/scx_sis monitor --json --interval 600 --count 1 >/tmp/off.mon 2>&1 &
mp=$!
sleep 1
perf bench sched pipe -l "$pipe_loops" >/dev/null 2>&1
sleep 0.5
kill -INT "$mp"
wait "$mp"
rec_mon off_window /tmp/off.mon

if stop_sched; then
  pass unload_default "rc=0"
else
  fail unload_default "rc=$?"
fi

# A ring buffer far smaller than a hackbench trace: drops are counted and reported, and the file
# is still a whole trace.
if start_sched --stats-interval 60 --trace-buffer-kib 16; then
  pass sched_small_ring "ops=$(scx_ops)"
  # shellcheck disable=SC2086
  traced drops -- hackbench $hb_args
  if grep -q 'records were lost' /tmp/drops.err; then
    pass drops_reported "$(grep -m1 'records were lost' /tmp/drops.err | cut -c1-120)"
  else
    fail drops_reported "no line about lost records: $(tr '\n' ' ' </tmp/drops.err | cut -c1-300)"
  fi
else
  fail sched_small_ring "$SCHED_START_ERR"
fi

guest_close unload dmesg_clean
finish
