#!/bin/sh
# Self-test of the VM harness, no scheduler needed (runs under the kernel's default scheduler):
# sched_ext present and disabled, promised topology, the workloads run.
# SIS_QUICK=1: only the boot/topology checks.
. /sis/lib.sh

info "uname -r: $(uname -r)"
info "boot to guest script: $(cut -d' ' -f1 /proc/uptime)s"
if [ -f "$SCX_DIR/state" ]; then
  pass sched_ext_available "state=$(scx_state) (no scheduler loaded: expect disabled)"
  [ "$(scx_state)" = disabled ] || fail sched_ext_idle "state=$(scx_state)"
else
  fail sched_ext_available "$SCX_DIR/state missing: kernel lacks CONFIG_SCHED_CLASS_EXT"
fi
if [ -f "/boot/config-$(uname -r)" ] && grep -qx 'CONFIG_SCHED_CLASS_EXT=y' "/boot/config-$(uname -r)"; then
  pass kconfig "/boot/config-$(uname -r) present, CONFIG_SCHED_CLASS_EXT=y"
else
  fail kconfig "/boot/config-$(uname -r) missing or without CONFIG_SCHED_CLASS_EXT=y"
fi
check_topology
[ -r /proc/sys/kernel/ftrace_enabled ] && info "ftrace_enabled=$(cat /proc/sys/kernel/ftrace_enabled)"
for t in hackbench perf stress-ng nice taskset; do
  command -v $t >/dev/null || fail tools "$t missing"
done

if [ "${SIS_QUICK:-0}" != 1 ]; then
  # shellcheck disable=SC2086  # word splitting intended
  run_hackbench hackbench ${SIS_HACKBENCH_ARGS:--g 4 -l 200}
  t0=$(now_cs)
  if perf bench sched messaging -g 2 -l 50 >/tmp/perf.out 2>&1; then
    pass perf_messaging "$(grep -m1 'Total time' /tmp/perf.out | tr -s ' ') wall=$(fmt_cs $(($(now_cs) - t0)))s"
  else
    fail perf_messaging "$(tail -n 3 /tmp/perf.out | tr '\n' ' ')"
  fi
  check_nice 3 "${SIS_NICE_SECS:-12}"
  run_stress stress "${SIS_STRESS_SECS:-60}"
  guest_close dmesg_clean
fi
finish
