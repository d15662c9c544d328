#!/bin/sh
# Wakequeue checks: the latency workload and hackbench with the wakequeue off, on with 1 shard and
# on with N shards in one boot (a table), the per-shard books balance, shard dispatch respects
# affinity, and 20 live toggles under hackbench lose nothing. tests/vm/wakeq.rs judges the records
# (SIS-REC) of all but the operational checks (started, dmesg clean, unload).
# Env: SIS_WAKEQ_SHARDS (N, default 2), SIS_WAKELAT_SECS (default 4), SIS_HACKBENCH_ARGS.
. /sis/lib.sh

shards=${SIS_WAKEQ_SHARDS:-2}
wl_secs=${SIS_WAKELAT_SECS:-4}
hb_args=${SIS_HACKBENCH_ARGS:--g 2 -l 100}
guest_open
guest_start --stats-interval 60

# run_config NAME EXPECT TUNE-ARGS...: switch live, run wakelat then hackbench while a monitor
# window covers both. Records for tests/vm/wakeq.rs (completes_NAME, books_NAME, a SIS-TABLE row):
# kv wq_run (name, rcs, EXPECT: the books must show queued tasks, "used", or none, "unused"),
# json wl_NAME (wakelat), text hb_NAME (hackbench), mon books_NAME (the window).
run_config() {
  _name=$1 _expect=$2
  shift 2
  if ! /bin/scx_sis tune "$@" >/dev/null 2>/tmp/tune.err; then
    grep -q "nothing to change" /tmp/tune.err || { fail "config_$_name" "tune $*: $(cat /tmp/tune.err)"; return; }
  fi
  sleep 1
  # The window must outlast both capped workloads (hackbench took 37-40 s under load): SIGINT
  # ends it once they are done, so the books are never read mid-flight.
  /bin/scx_sis monitor --json --interval $((wl_secs + 30 + 120 + 60)) --count 1 >/tmp/mon.json 2>&1 &
  _mon=$!
  sleep 1
  CAP_OUT=/tmp/wl.json run_capped $((wl_secs + 30)) /bin/scx_sis_lab wakelat --runtime "$wl_secs" --warmup 0.5 --json
  _wrc=$?
  # shellcheck disable=SC2086
  CAP_OUT=/tmp/hb.out run_capped 120 hackbench $hb_args
  _hrc=$?
  # Let every queued wakeup drain, then end the monitor window early.
  sleep 1
  kill -INT "$_mon" 2>/dev/null
  wait "$_mon"
  rec kv wq_run "name=$_name expect=$_expect wrc=$_wrc hrc=$_hrc"
  rec_lines json "wl_$_name" /tmp/wl.json
  rec_lines text "hb_$_name" /tmp/hb.out
  rec_mon "books_$_name" /tmp/mon.json
}

run_config off unused --wakeq off
run_config 1shard used --wakeq on --wakeq-shards 1
run_config "${shards}shards" used --wakeq on --wakeq-shards "$shards"
# Affinity: hackbench bound to CPUs 4-5 with the wakequeue on; sample where its tasks run.
/bin/scx_sis tune --wakeq on --wakeq-shards "$shards" >/dev/null 2>&1
# shellcheck disable=SC2086
taskset -c 4-5 hackbench $hb_args >/tmp/hb_aff.out 2>&1 &
_hb=$!
outside=0
samples=0
while kill -0 "$_hb" 2>/dev/null; do
  for st in /proc/[0-9]*/stat; do
    read -r line <"$st" 2>/dev/null || continue
    case $line in *"(hackbench)"*) ;; *) continue ;; esac
    # Field 39 is the CPU the task last ran on; the comm has no spaces here.
    # shellcheck disable=SC2086  # word splitting intended
    set -- $line
    samples=$((samples + 1))
    [ "${39}" = 4 ] || [ "${39}" = 5 ] || outside=$((outside + 1))
  done
done
wait "$_hb"
rec kv affinity "rc=$? samples=$samples outside=$outside"

# 20 live toggles while hackbench runs: it completes, no ejection, the queues drain to 0.
# shellcheck disable=SC2086
hackbench $hb_args >/tmp/hb_tog.out 2>&1 &
_hb=$!
i=0
bad=0
while [ $i -lt 20 ]; do
  /bin/scx_sis tune --wakeq off >/dev/null 2>&1 || bad=$((bad + 1))
  /bin/scx_sis tune --wakeq on >/dev/null 2>&1 || bad=$((bad + 1))
  i=$((i + 1))
done
wait "$_hb"
_trc=$?
sleep 1
CAP_OUT=/tmp/final.json run_capped 20 /bin/scx_sis monitor --json --interval 1 --count 1
rec kv toggle "rc=$_trc failed_tunes=$bad state=$(scx_state) alive=$(sched_alive && echo yes || echo no)"
rec_lines text hb_toggle /tmp/hb_tog.out
rec_mon toggle_final /tmp/final.json

guest_close dmesg_clean unload
finish
