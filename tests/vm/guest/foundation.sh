#!/bin/sh
# Foundation checks for scx_sis in the VM: it loads, runs hackbench, honours nice, survives a
# stress-ng mix without a watchdog ejection, and unloads cleanly on SIGINT.
# Env knobs: SIS_SCHED_ARGS (extra scx_sis args), SIS_HACKBENCH_ARGS, SIS_NICE_SECS,
# SIS_STRESS_SECS, SIS_STRESS_ARGS.
. /sis/lib.sh

info "uname -r: $(uname -r)"
info "boot to guest script: $(cut -d' ' -f1 /proc/uptime)s"
guest_open sched_ext_available scx_sis_binary
# shellcheck disable=SC2086  # word splitting intended
guest_start ${SIS_SCHED_ARGS:-}

# --- the daemon names how it learns a higher class holds a CPU and the ops flags it set
mech=$(grep -m1 '^held CPUs: ' "$SCHED_LOG" || true)
if [ -n "$mech" ]; then
  pass held_mechanism "$mech"
  info "$(grep -m1 '^verifier:' "$SCHED_LOG" || echo 'no verifier line')"
else
  fail held_mechanism "no 'held CPUs:' line in the scheduler's log"
fi

# --- workloads under scx_sis
# shellcheck disable=SC2086  # word splitting intended
run_hackbench hackbench ${SIS_HACKBENCH_ARGS:--g 4 -l 200}
check_nice 3 "${SIS_NICE_SECS:-12}"
run_stress stress "${SIS_STRESS_SECS:-60}"

# --- still in charge after the stress (no watchdog ejection, no BPF error), unload on SIGINT
guest_close
finish
