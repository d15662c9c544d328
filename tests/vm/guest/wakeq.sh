#!/bin/sh
# Wakequeue checks: the latency workload and hackbench with the wakequeue off, on with 1 shard and
# on with N shards in one boot (a table), the per-shard books balance, shard dispatch respects
# affinity, and 20 live toggles under hackbench lose nothing.
# Env: SIS_WAKEQ_SHARDS (N, default 2), SIS_WAKELAT_SECS (default 4), SIS_HACKBENCH_ARGS.
. /tests/lib.sh

shards=${SIS_WAKEQ_SHARDS:-2}
wl_secs=${SIS_WAKELAT_SECS:-4}
hb_args=${SIS_HACKBENCH_ARGS:--g 2 -l 100}
check_topology
# Only what the kernel says from here on: boot under a loaded TCG host logs harmless "bug"/"failed".
dmesg_lines0=$(dmesg | wc -l)

if ! start_sched --stats-interval 60; then
  fail sched_enabled "$SCHED_START_ERR"
  finish
fi
pass sched_enabled "ops=$(scx_ops)"

# shard_books JSON: "enqueued ran left depth" summed over every shard of every LLC.
shard_books() {
  echo "$1" | grep -o '"shards":{[^}]*}[^}]*}*' >/dev/null
  _e=$(echo "$1" | grep -o '"enqueued":[0-9]*' | cut -d: -f2 | awk '{s+=$1} END {print s+0}')
  _r=$(echo "$1" | grep -o '"ran":[0-9]*' | cut -d: -f2 | awk '{s+=$1} END {print s+0}')
  _l=$(echo "$1" | grep -o '"left":[0-9]*' | cut -d: -f2 | awk '{s+=$1} END {print s+0}')
  _d=$(echo "$1" | grep -o '"depth":[0-9]*' | cut -d: -f2 | awk '{s+=$1} END {print s+0}')
  echo "$_e $_r $_l $_d"
}

# run_config NAME TUNE-ARGS...: switch live, run wakelat then hackbench while a monitor window
# covers both, then check every task completed and the shard books balance.
run_config() {
  _name=$1; shift
  if ! /bin/scx_sis tune "$@" >/dev/null 2>/tmp/tune.err; then
    grep -q "nothing to change" /tmp/tune.err || { fail "config_$_name" "tune $*: $(cat /tmp/tune.err)"; return; }
  fi
  sleep 1
  /bin/scx_sis monitor --json --interval $((wl_secs + 40)) --count 1 >/tmp/mon.json 2>&1 &
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
  _p50=$(grep -o '"p50_us":[0-9.]*' /tmp/wl.json | head -1 | cut -d: -f2)
  _p99=$(grep -o '"p99_us":[0-9.]*' /tmp/wl.json | head -1 | cut -d: -f2)
  _rps=$(grep -o '"requests_per_sec":[0-9.]*' /tmp/wl.json | cut -d: -f2 | cut -d. -f1)
  _hb=$(grep '^Time:' /tmp/hb.out | awk '{print $2}')
  echo "SIS-TABLE $_name wakelat_p50_us=$_p50 wakelat_p99_us=$_p99 requests_per_s=$_rps hackbench_s=$_hb"
  if [ $_wrc -eq 0 ] && [ $_hrc -eq 0 ] && [ -n "$_hb" ] && [ -n "$_p99" ]; then
    pass "completes_$_name" "wakelat rc=0 p99=${_p99}us rps=$_rps, hackbench rc=0 time=${_hb}s"
  else
    fail "completes_$_name" "wakelat rc=$_wrc hackbench rc=$_hrc"
  fi
}

# books_after NAME EXPECT_QUEUED: the monitor JSON printed when run_config's window closed.
books_after() {
  _json=$(grep '^{' /tmp/mon.json | tail -1)
  echo "SIS-JSON $1 $_json"
  set -- "$1" "$2" $(shard_books "$_json")
  _name=$1; _expect=$2; _e=$3; _r=$4; _l=$5; _d=$6
  _detail="enqueued=$_e ran=$_r left=$_l queued_now=$_d"
  if [ -z "$_json" ]; then
    fail "books_$_name" "no monitor output: $(head -c 200 /tmp/mon.json)"
  elif [ "$_e" -ne $((_r + _l + _d)) ]; then
    fail "books_$_name" "$_detail: enqueued != ran + left + queued"
  elif [ "$_expect" = used ] && [ "$_e" -eq 0 ]; then
    fail "books_$_name" "$_detail: the wakequeue was on but nothing was queued"
  elif [ "$_expect" = unused ] && [ "$_e" -ne 0 ]; then
    fail "books_$_name" "$_detail: the wakequeue was off but tasks were queued"
  else
    pass "books_$_name" "$_detail"
  fi
}

run_config off --wakeq off
books_after off unused
run_config 1shard --wakeq on --wakeq-shards 1
books_after 1shard used
run_config "${shards}shards" --wakeq on --wakeq-shards "$shards"
books_after "${shards}shards" used

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
    cpu=$(echo "$line" | awk '{print $39}')
    samples=$((samples + 1))
    [ "$cpu" = 4 ] || [ "$cpu" = 5 ] || outside=$((outside + 1))
  done
done
wait "$_hb"
_arc=$?
if [ $_arc -eq 0 ] && [ "$samples" -gt 0 ] && [ "$outside" -eq 0 ]; then
  pass affinity "hackbench on CPUs 4-5 with the wakequeue on: rc=0, $samples samples, none outside 4-5"
else
  fail affinity "rc=$_arc samples=$samples outside_4_5=$outside"
fi

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
_json=$(CAP_OUT=/tmp/final.json run_capped 20 /bin/scx_sis monitor --json --interval 1 --count 1; cat /tmp/final.json)
_d=$(echo "$_json" | grep -o '"depth":[0-9]*' | cut -d: -f2 | awk '{s+=$1} END {print s+0}')
if [ $_trc -eq 0 ] && [ $bad -eq 0 ] && [ "$(scx_state)" = enabled ] && sched_alive && [ "$_d" = 0 ]; then
  pass toggle20 "hackbench rc=0 $(grep '^Time:' /tmp/hb_tog.out), 40 tunes ok, still enabled, queued now=$_d"
else
  fail toggle20 "hackbench rc=$_trc failed_tunes=$bad state=$(scx_state) queued_now=$_d"
fi

errs=$(scx_dmesg_errors $((dmesg_lines0 + 1)))
if [ -z "$errs" ]; then
  pass dmesg_clean "no sched_ext error / stall in dmesg"
else
  fail dmesg_clean "$(echo "$errs" | head -n 3 | tr '\n' '|')"
fi
stop_sched 20
_rc=$?
if [ $_rc -eq 0 ]; then pass unload "rc=0 state=$(scx_state)"; else fail unload "rc=$_rc"; fi
finish
