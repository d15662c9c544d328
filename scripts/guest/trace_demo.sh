#!/bin/sh
# The trace picture of the README: scx_sis traces one hackbench run and prints the summary and
# the SVG (base64, between markers) on the console, for scripts/trace-demo.sh to take out.
# Env: SIS_HACKBENCH_ARGS (default -g 2 -l 100), SIS_TRACE_ARGS (more scx_sis trace flags).
. /sis/lib.sh

if ! start_sched --stats-interval 60; then
  fail sched_enabled "$SCHED_START_ERR"
  finish
fi
# shellcheck disable=SC2086
/bin/scx_sis trace --duration 600 --svg /tmp/demo.svg -o /tmp/demo.json ${SIS_TRACE_ARGS:-} >/tmp/demo.sum 2>/tmp/demo.err &
tp=$!
wait_trace_on
# shellcheck disable=SC2086
hackbench ${SIS_HACKBENCH_ARGS:--g 2 -l 100} >/tmp/demo.hb 2>&1
sleep 0.5
kill -INT "$tp"
if wait "$tp"; then
  pass trace "$(grep -m1 'records in' /tmp/demo.err)"
else
  fail trace "$(tail -n 3 /tmp/demo.err | tr '\n' ' ')"
fi
echo "SIS-DEMO-SUMMARY-BEGIN"
cat /tmp/demo.err /tmp/demo.sum
echo "SIS-DEMO-SUMMARY-END"
echo "SIS-DEMO-SVG-BEGIN"
base64 /tmp/demo.svg
echo "SIS-DEMO-SVG-END"
stop_sched
finish
