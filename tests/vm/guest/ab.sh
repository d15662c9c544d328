#!/bin/sh
# scx_sis ab on a running scheduler under a hackbench loop: an A/A of the live tunables, the
# defaults against the wakequeue with one shard (with a user metric, hackbench's own time, and
# --adopt migrations), Ctrl-C in a B window, kill -9 in a B window followed by a tune, and a CPU
# hotplug (the daemon reloads) in a B window. The guest checks what a user sees at once (exit
# statuses, the one-line messages, tune --show before and after); the verdicts, in ab --json's
# records (json aa, json wakeq), are judged by tests/vm/ab.rs.
. /sis/lib.sh

MARK=/run/scx_sis/ab.json
HB_LOG=/tmp/hb.log
AB_OUT=/tmp/ab.out
AB_ERR=/tmp/ab.err
oneline() { tr '\n' '|' <"$1" | cut -c1-400; }
# shown NAME: tune --show's values into /tmp/show.NAME (every line, the generation's too, into
# /tmp/show.NAME.gen: every write raises the generation, so a restore is judged on the values).
shown() {
  tune --show
  cp "$TUNE_OUT" "/tmp/show.$1.gen"
  grep -v '^generation ' "$TUNE_OUT" >"/tmp/show.$1"
}
# same_show CHECK A B WHAT: pass CHECK when the values of shows A and B are byte-identical.
same_show() {
  if [ -s "/tmp/show.$2" ] && cmp -s "/tmp/show.$2" "/tmp/show.$3"; then
    pass "$1" "$4; tune --show identical but for the generation ($(sed -n 's/^generation *//p' "/tmp/show.$2.gen") -> $(sed -n 's/^generation *//p' "/tmp/show.$3.gen")): $(tr -s ' \n' ' ' <"/tmp/show.$3" | cut -c1-300)"
  else
    fail "$1" "$4; tune --show differs: $(diff "/tmp/show.$2" "/tmp/show.$3" | grep '^[-+][a-z]' | tr -s ' \n' ' ')"
  fi
}
# ab_bg ARGS...: scx_sis ab ARGS in the background (AB_PID).
ab_bg() {
  /bin/scx_sis ab "$@" >"$AB_OUT" 2>"$AB_ERR" &
  AB_PID=$!
}
# wait_side SIDE SECS: until the marker says SIDE is being measured (its settle over); 1 when
# ab ended or SECS passed first.
wait_side() {
  _deadline=$(($(now_cs) + $2 * 100))
  until grep -q "\"side\":\"$1\",\"settling\":false" "$MARK" 2>/dev/null; do
    [ "$(now_cs)" -ge "$_deadline" ] && return 1
    kill -0 "$AB_PID" 2>/dev/null || return 1
    sleep 0.2
  done
}
# ab_wait SECS: wait for the background ab (SIGKILL after SECS); AB_RC.
ab_wait() {
  rel_wait_exit "$AB_PID" "$1"
  AB_RC=$REL_RC
}

guest_open
guest_start --stats-interval 1
# hackbench without end, each run's "Time: S" appended to HB_LOG: the user metric reads the last.
: >"$HB_LOG"
start_bg_loop sh -c "hackbench -g 2 -l 100 | grep Time >>$HB_LOG"
sleep 3

# --------------------------------------------------------------------------- bad flags
shown start
CAP_OUT=$AB_OUT CAP_ERR=$AB_ERR run_capped 30 /bin/scx_sis ab --b '--prev-bias maybe' --window 1 --rounds 2
rc=$?
shown bad
if [ $rc -eq 2 ] && [ "$(wc -l <"$AB_ERR")" -eq 1 ] && grep -q "maybe" "$AB_ERR" && [ ! -s "$AB_OUT" ] &&
  cmp -s /tmp/show.start.gen /tmp/show.bad.gen && [ ! -e "$MARK" ]; then
  pass ab_bad_flag "rc=2, one line: $(oneline "$AB_ERR"); nothing changed (generation $(sed -n 's/^generation *//p' /tmp/show.bad.gen))"
else
  fail ab_bad_flag "rc=$rc stderr: $(oneline "$AB_ERR") stdout: $(oneline "$AB_OUT") marker=$([ -e "$MARK" ] && echo yes || echo no)"
fi

# --------------------------------------------------------------------------- A/A
shown aa0
CAP_OUT=$AB_OUT CAP_ERR=$AB_ERR run_capped 300 /bin/scx_sis ab --b '' --window 2 --rounds 6 --settle 1 --json
rc=$?
rec kv aa_rc "rc=$rc"
rec_lines json aa "$AB_OUT"
rec_lines text aa_err "$AB_ERR"
shown aa1
# An A/A writes nothing: the whole show, the generation too, is as before.
if [ $rc -eq 0 ] && cmp -s /tmp/show.aa0.gen /tmp/show.aa1.gen && [ ! -e "$MARK" ]; then
  pass ab_aa_restores "rc=0, tune --show byte-identical, generation included; marker removed"
else
  fail ab_aa_restores "rc=$rc, $(diff /tmp/show.aa0.gen /tmp/show.aa1.gen | grep '^[-+][a-z]' | tr -s ' \n' ' ') marker=$([ -e "$MARK" ] && echo yes || echo no); $(tail -n 2 "$AB_ERR" | tr '\n' '|')"
fi

# --------------------------------------------------------------------------- a real difference
# The defaults against every wakeup through one shared shard: migrations rise. A tune meanwhile
# is refused at once (one line: a wait for the lock would have said so after 0.2 s), naming ab;
# the stats line names the side of each window. Eight rounds, not the A/A's six: the migrations'
# interval must clear 1x, and one window's outlier widens six rounds' interval past it.
shown wq0
log0=$(wc -l <"$SCHED_LOG")
ab_bg --b '--wakeq on --wakeq-shards 1' --window 2 --rounds 8 --settle 1 --json \
  --metric-cmd "tail -n 1 $HB_LOG" --metric 'hackbench_s=Time: ([0-9.]+)' --adopt migrations
if wait_side B 120; then
  t0=$(now_cs)
  tune --prev-bias off
  took=$(($(now_cs) - t0))
  if [ "$TUNE_RC" -ne 0 ] && [ "$TUNE_RC" -ne 137 ] && [ "$(wc -l <"$TUNE_ERR")" -eq 1 ] &&
    grep -q "held by scx_sis ab (pid $AB_PID)" "$TUNE_ERR"; then
    pass ab_tune_refused "rc=$TUNE_RC after $(fmt_cs "$took")s (the process's start under TCG and load; one line: no wait for the lock, which says so after 0.2 s): $(oneline "$TUNE_ERR")"
  else
    fail ab_tune_refused "rc=$TUNE_RC after $(fmt_cs "$took")s: $(oneline "$TUNE_ERR")"
  fi
else
  fail ab_tune_refused "ab never reached a B window: $(oneline "$AB_ERR")"
fi
ab_wait 300
rec kv wq_rc "rc=$AB_RC"
rec_lines json wakeq "$AB_OUT"
rec_lines text wakeq_err "$AB_ERR"
tail -n +"$((log0 + 1))" "$SCHED_LOG" >/tmp/sched.wq.log
rec kv wq_tags "a=$(grep -c ' ab=A$' /tmp/sched.wq.log) b=$(grep -c ' ab=B$' /tmp/sched.wq.log) settle=$(grep -c ' ab=[AB](settle)$' /tmp/sched.wq.log) lines=$(grep -c '^\[scx_sis\]' /tmp/sched.wq.log)"
shown wq1
same_show ab_wakeq_restores wq0 wq1 "rc=$AB_RC, $(grep -m1 'kept A\|adopted' "$AB_ERR" | cut -c1-200)"

# --------------------------------------------------------------------------- Ctrl-C in B
shown int0
log0=$(wc -l <"$SCHED_LOG")
ab_bg --b '--prev-bias off' --window 3 --rounds 4 --settle 1
if wait_side B 120; then
  sleep 1
  kill -INT "$AB_PID"
  ab_wait 60
  shown int1
  # B was live: the daemon logged the switch to it.
  if tail -n +"$((log0 + 1))" "$SCHED_LOG" | grep -q 'prev-bias: on -> off'; then
    b_live=yes
  else
    b_live=no
  fi
  if [ "$AB_RC" -eq 0 ] && [ "$b_live" = yes ] && [ ! -e "$MARK" ] && grep -q 'interrupted' "$AB_OUT"; then
    same_show ab_sigint_restores int0 int1 "SIGINT in a B window (B was live): rc=0, $(grep -m1 'interrupted' "$AB_OUT" | cut -c1-200)"
  else
    fail ab_sigint_restores "rc=$AB_RC b_live=$b_live marker=$([ -e "$MARK" ] && echo yes || echo no) stdout: $(tail -n 2 "$AB_OUT" | tr '\n' '|') stderr: $(tail -n 3 "$AB_ERR" | tr '\n' '|')"
  fi
else
  fail ab_sigint_restores "ab never reached a B window: $(oneline "$AB_ERR")"
  kill -KILL "$AB_PID" 2>/dev/null
  wait "$AB_PID" 2>/dev/null
fi

# --------------------------------------------------------------------------- kill -9 in B
shown kill0
ab_bg --b '--prev-bias off' --window 3 --rounds 4 --settle 1
if wait_side B 120; then
  kill -KILL "$AB_PID"
  wait "$AB_PID" 2>/dev/null
  marker_left=$([ -e "$MARK" ] && echo yes || echo no)
  shown kill1
  rc1=$TUNE_RC
  repaired=$(cat "$TUNE_ERR")
  # A second show: nothing left to repair, and the values are where the first left them.
  shown kill2
  if [ "$marker_left" = yes ] && [ ! -e "$MARK" ] && [ "$rc1" -eq 0 ] &&
    [ "$(echo "$repaired" | wc -l)" -eq 1 ] && echo "$repaired" | grep -q "pid $AB_PID) was killed" &&
    echo "$repaired" | grep -q 'prev-bias: off -> on' && [ ! -s "$TUNE_ERR" ] &&
    cmp -s /tmp/show.kill1.gen /tmp/show.kill2.gen; then
    same_show ab_kill_repaired kill0 kill1 "kill -9 in a B window left the marker; tune --show said: $repaired"
  else
    fail ab_kill_repaired "marker after the kill: $marker_left, now: $([ -e "$MARK" ] && echo yes || echo no); tune rc=$rc1 said: '$repaired'; second show $(cmp -s /tmp/show.kill1.gen /tmp/show.kill2.gen && echo same || echo differs), said: $(oneline "$TUNE_ERR")"
  fi
else
  fail ab_kill_repaired "ab never reached a B window: $(oneline "$AB_ERR")"
  kill -KILL "$AB_PID" 2>/dev/null
  wait "$AB_PID" 2>/dev/null
fi

# --------------------------------------------------------------------------- a reload in B
# dmesg is judged up to here: on 6.12 taking a CPU offline can make the deadline class warn
# (task_non_contending, kernel/sched/deadline.c) whatever the scheduler; reliability.sh leaves
# its hotplug out of its dmesg checks too. What the kernel says after is shown, not judged.
guest_close dmesg_clean
DMESG_HOTPLUG=$(($(dmesg | wc -l) + 1))
# CPU hotplug: the kernel asks the scheduler to restart and the daemon reloads it.
CPU=7
ONLINE=/sys/devices/system/cpu/cpu$CPU/online
shown rl0
ab_bg --b '--prev-bias off' --window 3 --rounds 6 --settle 1
if [ -w "$ONLINE" ] && wait_side B 120; then
  restarts0=$(grep -c 'asked for a restart' "$SCHED_LOG")
  echo 0 >"$ONLINE"
  ab_wait 240
  wait_state enabled 120
  restarts1=$(grep -c 'asked for a restart' "$SCHED_LOG")
  shown rl1
  d="rc=$AB_RC, daemon restarts $restarts0 -> $restarts1, state=$(scx_state); ab said: $(tail -n 1 "$AB_ERR" | cut -c1-300)"
  if [ "$AB_RC" -eq 1 ] && [ "$restarts1" -gt "$restarts0" ] && grep -q 'the scheduler reloaded' "$AB_ERR" &&
    [ ! -e "$MARK" ] && grep -q 'reloading with the tunables from before it' "$SCHED_LOG"; then
    same_show ab_reload_restores rl0 rl1 "$d"
  else
    fail ab_reload_restores "$d; marker=$([ -e "$MARK" ] && echo yes || echo no)"
  fi
  echo 1 >"$ONLINE"
  sleep 2
  wait_state enabled 120
else
  fail ab_reload_restores "$ONLINE not writable, or ab never reached a B window: $(oneline "$AB_ERR")"
  kill -KILL "$AB_PID" 2>/dev/null
  wait "$AB_PID" 2>/dev/null
fi

check_bg_loop ab_load 120 "hackbench runs under ab"
info "dmesg since the hotplug: $(scx_dmesg_errors "$DMESG_HOTPLUG" | head -n 3 | tr '\n' '|')"
guest_close sched_survived sigint_unload
finish
