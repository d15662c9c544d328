#!/bin/sh
# Stealing on expected wait: runs the workloads and records one monitor window per phase
# (record mon PHASE); tests/vm/steal.rs judges them.
#   idle         4 s with nothing to run: idle dispatches that look at (almost) no CPU.
#   hb_default   hackbench under the default steal-min.
#   hb_pinned    the same beside three busy loops bound to CPU 1, whose queue then holds
#                tasks no other CPU may take: moves from it must take the task they judged.
#   hb_eager     hackbench three times with --steal-min-us 0 (steal whatever waits) and wakeup
#                preemption off (every wakee behind a busy CPU kicks a stealer), switched live.
#   hb_lazy      hackbench once with --steal-min-us 100000: heads are left as young.
# Env: SIS_HACKBENCH_ARGS (default "-g 2 -l 100").
. /sis/lib.sh

hb_args=${SIS_HACKBENCH_ARGS:--g 2 -l 100}
guest_open
guest_start --stats-interval 60

# window PHASE CMD...: one monitor window over CMD, recorded as mon PHASE.
window() {
  _phase=$1; shift
  mon_window_start /tmp/steal_mon
  "$@" >/tmp/steal_cmd 2>&1
  _rc=$?
  mon_window_stop "$_phase"
  if [ $_rc -eq 0 ]; then
    pass "ran_$_phase" "$* rc=0 $(grep '^Time:' /tmp/steal_cmd)"
  else
    fail "ran_$_phase" "$* rc=$_rc: $(tail -c 200 /tmp/steal_cmd)"
  fi
}

# tune FLAGS...: switch live; "nothing to change" is fine.
tune() {
  if ! /bin/scx_sis tune "$@" >/dev/null 2>/tmp/tune.err; then
    grep -q "nothing to change" /tmp/tune.err || fail "tune" "tune $*: $(cat /tmp/tune.err)"
  fi
}

window idle sleep 4
# shellcheck disable=SC2086
window hb_default hackbench $hb_args
pinned=''
for _ in 1 2 3; do
  taskset -c 1 sh -c 'while :; do :; done' &
  pinned="$pinned $!"
done
# shellcheck disable=SC2086
window hb_pinned hackbench $hb_args
# shellcheck disable=SC2086
kill -KILL $pinned 2>/dev/null
# shellcheck disable=SC2086
wait $pinned 2>/dev/null
# Wakeup preemption off in this window: a wakee that preempts its CPU's task is no wakee
# queued behind it, and so no kick, and steal_from_kicker needs kicked stealers that take
# their kicker's work (with it on, three runs gave 4 kicks and 0-1 such steals on 7.x).
tune --steal-min-us 0 --wakeup-preempt off
window hb_eager sh -c "hackbench $hb_args && hackbench $hb_args && hackbench $hb_args"
tune --steal-min-us 100000 --wakeup-preempt on
# shellcheck disable=SC2086
window hb_lazy hackbench $hb_args
tune --steal-min-us 500

guest_close sched_survived
stop_sched
finish
