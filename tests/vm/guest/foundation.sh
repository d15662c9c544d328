#!/bin/sh
# Foundation checks for scx_sis in the VM: it loads, runs hackbench, honours nice, survives a
# stress-ng mix without a watchdog ejection, and unloads cleanly on SIGINT.
# Env knobs: SIS_SCHED_ARGS (extra scx_sis args), SIS_HACKBENCH_ARGS, SIS_NICE_SECS,
# SIS_STRESS_SECS, SIS_STRESS_ARGS.
. /tests/lib.sh

info "uname -r: $(uname -r)"
info "boot to guest script: $(cut -d' ' -f1 /proc/uptime)s"
check_topology

# --- sched_ext present and idle before we start
if [ ! -f "$SCX_DIR/state" ]; then
  fail sched_ext_available "$SCX_DIR/state missing: kernel lacks CONFIG_SCHED_CLASS_EXT"
  finish
fi
if [ "$(scx_state)" != disabled ]; then
  fail sched_ext_available "state=$(scx_state) before scx_sis started (expected disabled)"
  finish
fi
if [ ! -x /bin/scx_sis ]; then
  fail scx_sis_binary "/bin/scx_sis missing (run.sh --bin)"
  finish
fi
dmesg_lines0=$(dmesg | wc -l)

# --- load
# shellcheck disable=SC2086
if start_sched ${SIS_SCHED_ARGS:-}; then
  ops=$(scx_ops)
  case $ops in
    scx_sis*) pass sched_enabled "state=enabled ops=$ops after $(fmt_cs "$SCHED_START_CS")s" ;;
    *) fail sched_enabled "state=enabled but $SCX_DIR/root/ops='$ops' (expected scx_sis*)" ;;
  esac
else
  fail sched_enabled "$SCHED_START_ERR; last log line: $(tail -n 1 "$SCHED_LOG" | cut -c1-200)"
  finish
fi

# --- the daemon names how RT/deadline takeovers reach it and the ops flags it set
mech=$(grep -m1 '^rt takeover: ' "$SCHED_LOG" || true)
if [ -n "$mech" ]; then
  pass rt_mechanism "$mech"
  info "$(grep -m1 '^verifier:' "$SCHED_LOG" || echo 'no verifier line')"
else
  fail rt_mechanism "no 'rt takeover:' line in the scheduler's log"
fi

# --- workloads under scx_sis
# shellcheck disable=SC2086  # word splitting intended
run_hackbench hackbench ${SIS_HACKBENCH_ARGS:--g 4 -l 200}
check_nice 3 "${SIS_NICE_SECS:-12}"
run_stress stress "${SIS_STRESS_SECS:-60}"

# --- still in charge after the stress (no watchdog ejection, no BPF error)
state=$(scx_state)
if [ "$state" = enabled ] && sched_alive; then
  pass sched_survived "state=enabled, scx_sis pid $SCHED_PID alive, ops=$(scx_ops)"
else
  fail sched_survived "state=$state, scx_sis alive=$(sched_alive && echo yes || echo no)"
fi
errs=$(scx_dmesg_errors $((dmesg_lines0 + 1)))
if [ -z "$errs" ]; then
  pass dmesg_clean "no sched_ext error / stall / BUG / WARNING in dmesg"
else
  fail dmesg_clean "$(echo "$errs" | head -n 3 | tr '\n' '|')"
fi

# --- unload on SIGINT
t0=$(now_cs)
stop_sched 20
rc=$?
if wait_state disabled 5; then
  st="state=disabled"
  ok=1
else
  st="state=$(scx_state) 5s after exit"
  ok=0
fi
detail="rc=$rc $st after $(fmt_cs $(($(now_cs) - t0)))s; dmesg: $(dmesg | grep -i 'sched_ext' | tail -n 1 | sed 's/^\[[^]]*\] *//')"
if [ $rc -eq 0 ] && [ $ok = 1 ]; then
  pass sigint_unload "$detail"
else
  fail sigint_unload "$detail"
fi

finish
