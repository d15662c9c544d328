#!/bin/sh
# Guest side of `scx_sis_lab bench --vm`: runs the bench matrix and prints one "SIS-BENCH {json}"
# line per run (progress as "SIS-BENCH-PROGRESS ..."); the host renders the table and the plot.
# Env: SIS_BENCH_PLAN (the plan as JSON, written by the host), or SIS_BENCH_ARGS (bench flags,
# e.g. "--quick --repeats 1 --configs eevdf,all-on --workloads hackbench") when run by hand.
. /sis/lib.sh

check_topology
if [ ! -f "$SCX_DIR/state" ]; then
  fail sched_ext_available "$SCX_DIR/state missing: kernel lacks CONFIG_SCHED_CLASS_EXT"
  finish
fi
info "bpf_stats_enabled=$(cat /proc/sys/kernel/bpf_stats_enabled 2>/dev/null)"
dmesg_lines0=$(dmesg | wc -l)

t0=$(now_cs)
# shellcheck disable=SC2086  # SIS_BENCH_ARGS is a list of flags
/bin/scx_sis_lab bench --native-guest ${SIS_BENCH_ARGS:-}
rc=$?
if [ $rc -eq 0 ]; then
  pass bench "rc=0 in $(fmt_cs $(($(now_cs) - t0)))s"
else
  fail bench "scx_sis_lab bench rc=$rc after $(fmt_cs $(($(now_cs) - t0)))s"
fi

# Informative only: a scheduler ejected mid-run is already a failed run in the records.
errs=$(scx_dmesg_errors $((dmesg_lines0 + 1)))
[ -n "$errs" ] && info "dmesg: $(echo "$errs" | head -n 3 | tr '\n' '|')"
if [ "$(scx_state)" = disabled ]; then
  pass clean_exit "sched_ext disabled after the bench"
else
  fail clean_exit "sched_ext $(scx_state) after the bench (ops $(scx_ops))"
fi
finish
