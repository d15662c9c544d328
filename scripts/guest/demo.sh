#!/bin/sh
# Demo: scx_sis prints its per-LLC lines while hackbench runs a few times, then SIGINT.
# Env: SIS_SCHED_ARGS (scx_sis args), SIS_DEMO_SECS (default 25), SIS_HACKBENCH_ARGS.
. /sis/lib.sh

secs=${SIS_DEMO_SECS:-25}
echo "=== demo on $(uname -r), $(nproc) CPUs, LLCs: $(cat /sys/devices/system/cpu/cpu[0-9]*/cache/index3/shared_cpu_list | sort -u | tr '\n' ' ')"
# shellcheck disable=SC2086
if ! start_sched ${SIS_SCHED_ARGS:-}; then
  fail demo_start "scx_sis did not enable sched_ext"
  finish
fi
echo "=== scx_sis enabled ($(scx_ops)); streaming its output for ${secs}s"
tail -n +1 -f "$SCHED_LOG" &
tailpid=$!
end=$(($(now_cs) + secs * 100))
i=0
while [ "$(now_cs)" -lt "$end" ]; do
  i=$((i + 1))
  # shellcheck disable=SC2086
  out=$(hackbench ${SIS_HACKBENCH_ARGS:--g 2 -l 100} 2>&1 | grep '^Time:')
  echo "=== hackbench run $i: $out"
done
echo "=== SIGINT to scx_sis"
stop_sched 20
rc=$?
sleep 0.5
kill "$tailpid" 2>/dev/null
wait "$tailpid" 2>/dev/null
if [ $rc -eq 0 ]; then pass demo "scx_sis exited rc=0, state=$(scx_state)"; else fail demo "scx_sis exited rc=$rc"; fi
finish
