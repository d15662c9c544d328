#!/bin/sh
# What a fleet administrator meets: exit statuses by cause (a bad flag, a second instance, an
# injected scx_bpf_error(), sysrq-S), a SIGTERM during the verifier (nothing attaches), the build
# id in the ops name, an idempotent tune, users who are not root told that root is needed (also
# with /sys/fs/bpf 0700, as systemd mounts it), trace outputs checked before recording (a missing
# directory, a symlink), and a trace and a monitor across a reload (CPU hotplug) and an exit
# (sysrq-S): the trace ends at once, writes what it caught and says why, the reloaded instance
# has the trace off, the monitor reconnects; a storm of concurrent tunes against the live
# scheduler (the judge, fleet.rs, requires that no snapshot BPF took was torn), a suspend and
# resume (pm_test core) with a monitor and a trace running, a pin directory that is not root's
# (status 8) and a kernel without a config file for libbpf (status 3, the files named).
# Env: SIS_FLEET_HOTPLUG_CPU (default 3), SIS_FLEET_STORM_SECS (default 20).
. /sis/lib.sh

HCPU=${SIS_FLEET_HOTPLUG_CPU:-3}
ONLINE=/sys/devices/system/cpu/cpu$HCPU/online
STARTS='scx_sis on kernel'
# A trace polls its scheduler's pin every 100 ms, so it stops recording within a second of the
# daemon's letting go of the scheduler (the log's MARK line, or its exit); its exit, which this
# measures, also waits for the last drain and the file's write (megabytes of JSON under TCG, which
# runs the guest ~100x slower, and slower still beside another VM on the host). The bound is what
# tells a trace that noticed the scheduler's exit from one that records until its --duration (600
# s here). The kernel's own disable before the mark (seconds under TCG with a workload running) is
# not the trace's to shorten.
END_BOUND_CS=${SIS_FLEET_END_BOUND_CS:-1000}

# watch_end TRACE_PID MARK: poll every 50 ms until the trace exits (30 s at most); sets MARK_CS
# (when MARK first showed in the scheduler log, or the daemon exited) and END_CS (when the
# trace exited), both from the call, and LAG_CS, the trace's lag behind the mark.
watch_end() {
  _w0=$(now_cs) MARK_CS= END_CS=
  while [ "$(elapsed_cs "$_w0")" -lt 3000 ]; do
    if [ -z "$MARK_CS" ] && { grep -qF -- "$2" "$SCHED_LOG" || ! sched_alive; }; then
      MARK_CS=$(elapsed_cs "$_w0")
    fi
    if ! kill -0 "$1" 2>/dev/null || grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; then
      END_CS=$(elapsed_cs "$_w0")
      break
    fi
    sleep 0.05
  done
  [ -n "$MARK_CS" ] || MARK_CS=$(elapsed_cs "$_w0")
  [ -n "$END_CS" ] || END_CS=$(elapsed_cs "$_w0")
  LAG_CS=$((END_CS - MARK_CS))
  [ "$LAG_CS" -ge 0 ] || LAG_CS=0
}
check_topology

# cap NAME SECS CMD...: run CMD capped at SECS; rc in CAP_RC, output in /tmp/NAME.out, .err.
cap() {
  _cn=$1 _cs=$2
  shift 2
  CAP_OUT=/tmp/$_cn.out CAP_ERR=/tmp/$_cn.err run_capped "$_cs" "$@"
  CAP_RC=$?
}
line() { tr '\n' '|' <"$1" | cut -c1-240; }
# as_nobody NAME CMD: CMD (one shell word list) as user nobody, capped at 30 s.
as_nobody() {
  _an=$1
  shift
  cap "$_an" 30 su -s /bin/sh nobody -c "$*"
}
# elapsed_cs T0: centiseconds since T0 (now_cs).
elapsed_cs() { echo $(($(now_cs) - $1)); }

# --------------------------------------------------------------------------- usage, status 2
cap usage 30 /bin/scx_sis --sis-util cubic
if [ "$CAP_RC" -eq 2 ] && grep -q 'possible values: off, linear, quadratic' /tmp/usage.err; then
  pass usage_rc2 "rc=2: $(line /tmp/usage.err)"
else
  fail usage_rc2 "want rc=2 and the possible values: rc=$CAP_RC $(line /tmp/usage.err)"
fi

# --------------------------------------------------------------------------- SIGTERM in the verifier
# The daemon announces the verifier; a SIGTERM then must stop it before it attaches: the state
# never reads enabled, the daemon exits 0 and says it never replaced the kernel's scheduler.
/bin/scx_sis --stats-interval 60 >/tmp/verif.log 2>&1 &
vp=$!
t0=$(now_cs)
until grep -q 'loading the BPF program' /tmp/verif.log || [ "$(elapsed_cs "$t0")" -gt 6000 ] || ! kill -0 "$vp" 2>/dev/null; do
  sleep 0.05
done
kill -TERM "$vp" 2>/dev/null
seen=
while kill -0 "$vp" 2>/dev/null && [ "$(elapsed_cs "$t0")" -lt 12000 ]; do
  [ "$(scx_state)" = enabled ] && seen=1
  sleep 0.05
done
rel_wait_exit "$vp" 5
d="rc=$REL_RC state seen enabled=${seen:-no}; log: $(line /tmp/verif.log)"
if [ "$REL_RC" -eq 0 ] && [ -z "$seen" ] && grep -q 'stopped before attaching' /tmp/verif.log &&
  [ "$(scx_state)" = disabled ]; then
  pass sigterm_in_verifier_attaches_nothing "$d"
else
  fail sigterm_in_verifier_attaches_nothing "$d"
fi

# --------------------------------------------------------------------------- running: build id
if ! start_sched --stats-interval 60; then
  fail sched_enabled "$SCHED_START_ERR"
  finish
fi
DAEMON=$SCHED_PID
ver=$(/bin/scx_sis --version)
hash=$(echo "$ver" | sed -n 's/.*-\(g[0-9a-f]\{7,\}\).*/\1/p')
ops=$(scx_ops)
if [ -n "$hash" ] && echo "$ops" | grep -q "_${hash}_" && grep -q "^version: .*$hash" "$SCHED_LOG" &&
  grep -q 'loading the BPF program' "$SCHED_LOG"; then
  pass build_id "--version '$ver', ops $ops, $(grep -m1 '^version:' "$SCHED_LOG")"
else
  fail build_id "--version '$ver' (commit '$hash'), ops '$ops', startup: $(grep -m1 '^version:' "$SCHED_LOG")"
fi

# --------------------------------------------------------------------------- second instance, 4
cap second 60 /bin/scx_sis --stats-interval 60
if [ "$CAP_RC" -eq 4 ] && grep -q 'already' /tmp/second.err && sched_alive; then
  pass second_instance_rc4 "rc=4: $(line /tmp/second.err)"
else
  fail second_instance_rc4 "want rc=4: rc=$CAP_RC $(line /tmp/second.err); first alive=$(sched_alive && echo yes || echo no)"
fi

# --------------------------------------------------------------------------- tune, idempotent
cap tune1 30 /bin/scx_sis tune --prev-bias off
r1=$CAP_RC
cap tune2 30 /bin/scx_sis tune --prev-bias off
r2=$CAP_RC
cap tune3 30 /bin/scx_sis tune --prev-bias off --prev-bias on
r3=$CAP_RC
d="first rc=$r1 '$(line /tmp/tune1.out)', again rc=$r2 '$(line /tmp/tune2.err)', off then on rc=$r3 '$(line /tmp/tune3.out)'"
if [ "$r1" -eq 0 ] && grep -q 'prev-bias: on -> off' /tmp/tune1.out && [ "$r2" -eq 0 ] &&
  grep -q 'nothing changed' /tmp/tune2.err && [ ! -s /tmp/tune2.out ] &&
  [ "$r3" -eq 0 ] && grep -q 'prev-bias: off -> on' /tmp/tune3.out; then
  pass tune_idempotent_last_flag_wins "$d"
else
  fail tune_idempotent_last_flag_wins "$d"
fi

# --------------------------------------------------------------------------- tune storm
# Writers change the tunables back and forth while hackbench keeps the callbacks busy: every
# snapshot BPF takes must be of a whole copy. The lab's tune-storm writes as `tune` does (lock,
# read, change, write) from three threads, thousands of times, and a `tune` loop runs beside it
# (a process per write manages a few a second under TCG). A copy that raced a write is counted
# (tun_raced) and taken again; one left without a whole copy is counted too (tun_torn). fleet.rs
# judges both from the monitor window around the storm; here, every write must succeed and the
# scheduler survive.
mon_window_start /tmp/storm.mon
start_bg_loop hackbench -g 2 -l 50
storm_secs=${SIS_FLEET_STORM_SECS:-20}
storm_end=$(($(now_cs) + storm_secs * 100))
(
  n=0 bad=0 i=0
  while [ "$(now_cs)" -lt "$storm_end" ]; do
    i=$((i + 1))
    /bin/scx_sis tune --steal-min-us $((450 + i % 2)) --prev-bias on >/dev/null 2>>/tmp/storm.err || bad=$((bad + 1))
    n=$((n + 1))
  done
  echo "$n $bad" >/tmp/storm.tune
) &
tune_loop=$!
cap storm $((storm_secs + 60)) /bin/scx_sis_lab tune-storm --secs "$storm_secs" --writers 3
storm_rc=$CAP_RC
wait "$tune_loop"
stop_bg_loop 60
mon_window_stop tune_storm
read -r tunes tune_fails </tmp/storm.tune
writes=$(sed -n 's/^tune-storm: \([0-9]*\) writes.*/\1/p' /tmp/storm.out)
rec kv tune_storm_tunes "writes=${writes:-0} tunes=$tunes fails=$tune_fails"
d="tune-storm rc=$storm_rc: $(line /tmp/storm.out) $(line /tmp/storm.err | cut -c1-200); $tunes tunes beside it, $tune_fails failed; hackbench runs $BG_LOOP_RUNS (rc!=0: $BG_LOOP_FAILS); monitor rc=$MON_WIN_RC"
if [ "$storm_rc" -eq 0 ] && [ "${writes:-0}" -gt 0 ] && [ "$tunes" -gt 0 ] && [ "$tune_fails" -eq 0 ] &&
  sched_alive && [ "$(scx_state)" = enabled ] && [ "$MON_WIN_RC" -eq 0 ]; then
  pass tune_storm_survived "$d"
else
  fail tune_storm_survived "$d; daemon alive=$(sched_alive && echo yes || echo no) state=$(scx_state)"
fi

# --------------------------------------------------------------------------- not root
nobody_usable
# not_root MODE: tune, monitor, --monitor and trace as nobody must say root is needed (status 3),
# never that no instance runs; the trace leaves no file.
not_root() {
  _m=$1 _ok=1 _d=
  for _c in "tune --show" "monitor --count 1 --interval 0.5" "--monitor 0.5" "trace --duration 1 -o /tmp/nr_trace.json"; do
    as_nobody nr "/bin/scx_sis $_c"
    _d="$_d [$_c: rc=$CAP_RC $(line /tmp/nr.err)]"
    if [ "$CAP_RC" -ne 3 ] || ! grep -q 'must run as root' /tmp/nr.err || grep -q 'no scx_sis instance' /tmp/nr.err; then
      _ok=0
    fi
  done
  [ -e /tmp/nr_trace.json ] && _ok=0 && _d="$_d /tmp/nr_trace.json left behind"
  ls -a /tmp | grep -q 'nr_trace.json.*tmp' && _ok=0 && _d="$_d a temporary file left behind"
  if [ $_ok = 1 ]; then pass "not_root_$_m" "$_d"; else fail "not_root_$_m" "$_d"; fi
}
bpf_mode=$(stat -c %a /sys/fs/bpf)
not_root "bpffs_$bpf_mode"
chmod 700 /sys/fs/bpf
not_root bpffs_700
chmod "$bpf_mode" /sys/fs/bpf

# --------------------------------------------------------------------------- trace outputs
t0=$(now_cs)
cap trmiss 60 /bin/scx_sis trace --duration 5 -o /nonexistent/x.json
mrc=$CAP_RC tw=$(elapsed_cs "$t0")
cap trshow 30 /bin/scx_sis tune --show
d="rc=$mrc in $(fmt_cs "$tw")s: $(line /tmp/trmiss.err); trace after: $(grep '^trace ' /tmp/trshow.out)"
if [ "$mrc" -ne 0 ] && ! grep -q 'recording for' /tmp/trmiss.err &&
  grep -q 'nonexistent/x.json' /tmp/trmiss.err && grep -q '^trace  *off' /tmp/trshow.out && [ "$tw" -lt 400 ]; then
  pass trace_missing_dir_fails_first "$d"
else
  fail trace_missing_dir_fails_first "$d"
fi

echo precious >/tmp/victim
ln -sf /tmp/victim /tmp/link.json
cap trlink 60 /bin/scx_sis trace --duration 1 -o /tmp/link.json
d="rc=$CAP_RC victim='$(cat /tmp/victim)' link.json: $(ls -l /tmp/link.json | cut -c1-80); $(line /tmp/trlink.err)"
if [ "$CAP_RC" -eq 0 ] && [ "$(cat /tmp/victim)" = precious ] && [ ! -L /tmp/link.json ] &&
  head -c 1 /tmp/link.json | grep -q '[[{]'; then
  pass trace_symlink_not_followed "$d"
else
  fail trace_symlink_not_followed "$d"
fi

# --------------------------------------------------------------------------- a reload (hotplug)
# A trace and a monitor running when the kernel asks for a restart: the trace ends within a
# second or so of the scheduler's exit (judged against the log line the daemon prints), writes
# its file and says why; the reloaded instance has the trace off; the monitor reconnects.
if [ -w "$ONLINE" ] && [ "$(cat "$ONLINE")" = 1 ]; then
  /bin/scx_sis monitor --json --interval 1 >/tmp/mon.out 2>/tmp/mon.err &
  mp=$!
  /bin/scx_sis trace --duration 600 -o /tmp/hp.json >/tmp/hp.sum 2>/tmp/hp.err &
  tp=$!
  wait_trace_on
  hackbench -g 2 -l 20 >/dev/null 2>&1 &
  hb=$!
  s0=$(rel_count "$STARTS" "$SCHED_LOG")
  t0=$(now_cs)
  echo 0 >"$ONLINE"
  watch_end "$tp" 'asked for a restart'
  rel_wait_exit "$tp" 10
  wait "$hb"
  back=
  while [ "$(elapsed_cs "$t0")" -lt 9000 ]; do
    if [ "$(scx_state)" = enabled ] && [ "$(rel_count "$STARTS" "$SCHED_LOG")" -gt "$s0" ]; then
      back=$(elapsed_cs "$t0")
      break
    fi
    sleep 0.1
  done
  d="trace rc=$REL_RC ended $(fmt_cs "$LAG_CS")s after the daemon logged the restart request ($(fmt_cs "$MARK_CS")s and $(fmt_cs "$END_CS")s after the offline); $(grep -m1 'records in' /tmp/hp.err); file $(wc -c </tmp/hp.json 2>/dev/null)B; scheduler back after ${back:-never}cs"
  if [ "$REL_RC" -eq 0 ] && [ "$LAG_CS" -lt "$END_BOUND_CS" ] && grep -q 'ended: the scheduler went away' /tmp/hp.err && [ -s /tmp/hp.json ] &&
    /bin/scx_sis_lab trace-check /tmp/hp.json >/tmp/hp.chk 2>&1; then
    pass trace_ends_at_reload "$d"
  else
    fail trace_ends_at_reload "$d; $(line /tmp/hp.err) check: $(line /tmp/hp.chk)"
  fi
  cap hpshow 30 /bin/scx_sis tune --show
  if [ -n "$back" ] && grep -q '^trace  *off' /tmp/hpshow.out; then
    pass reload_has_trace_off "after the reload: $(grep '^trace ' /tmp/hpshow.out)"
  else
    fail reload_has_trace_off "back=${back:-never} rc=$CAP_RC $(line /tmp/hpshow.out) $(line /tmp/hpshow.err)"
  fi
  echo 1 >"$ONLINE"
  sleep 1
  wait_state enabled 60
  # Objects printed after the reconnect prove the monitor followed the new instance.
  n0=$(grep -c '^{' /tmp/mon.out)
  sleep 4
  n1=$(grep -c '^{' /tmp/mon.out)
  alive=$(kill -0 "$mp" 2>/dev/null && echo yes || echo no)
  kill -TERM "$mp" 2>/dev/null
  rel_wait_exit "$mp" 10
  d="monitor alive=$alive objects $n0 -> $n1 across 4 s; rc=$REL_RC; $(line /tmp/mon.err)"
  if [ "$alive" = yes ] && grep -q 'reconnected' /tmp/mon.err && [ "$n1" -gt "$n0" ]; then
    pass monitor_reconnects "$d"
  else
    fail monitor_reconnects "$d"
  fi
else
  info "cpu$HCPU cannot go offline here: no hotplug checks"
fi

# --------------------------------------------------------------------------- suspend and resume
# A suspend to RAM as far as the kernel's pm_test "core" level (tasks frozen, devices suspended,
# the non-boot CPUs offline, then resumed: what a real suspend does short of the firmware) with a
# monitor and a trace running. The scheduler must be back within seconds of the resume (the
# same instance, or a reloaded one if the kernel asked for a restart as the CPUs went away); the
# monitor carries on (reconnecting if the instance changed); the trace says what happened: it
# ends saying the scheduler went away if it did, else it records on and ends when asked to.
if grep -qw mem /sys/power/state 2>/dev/null && [ -w /sys/power/pm_test ]; then
  /bin/scx_sis monitor --json --interval 1 >/tmp/smon.out 2>/tmp/smon.err &
  mp=$!
  /bin/scx_sis trace --duration 600 -o /tmp/susp.json >/tmp/susp.sum 2>/tmp/susp.err &
  tp=$!
  wait_trace_on
  s0=$(rel_count "$STARTS" "$SCHED_LOG") r0=$(rel_count 'asked for a restart' "$SCHED_LOG")
  echo core >/sys/power/pm_test
  t0=$(now_cs)
  echo mem >/sys/power/state
  src=$?
  resumed=$(elapsed_cs "$t0")
  echo none >/sys/power/pm_test
  t1=$(now_cs)
  back=
  # Back: the daemon alive, sched_ext enabled, and a new instance up for every restart request.
  while [ "$(elapsed_cs "$t1")" -lt 9000 ]; do
    if sched_alive && [ "$(scx_state)" = enabled ] &&
      [ $(($(rel_count "$STARTS" "$SCHED_LOG") - s0)) -ge $(($(rel_count 'asked for a restart' "$SCHED_LOG") - r0)) ]; then
      back=$(elapsed_cs "$t1")
      break
    fi
    sleep 0.1
  done
  reloaded=$(($(rel_count "$STARTS" "$SCHED_LOG") - s0))
  info "suspend: echo mem rc=$src after $(fmt_cs "$resumed")s; reloads: $reloaded; dmesg: $(dmesg | grep -iE 'PM: suspend|pm_test|sched_ext' | tail -n 6 | tr '\n' '|' | cut -c1-400)"
  d="echo mem rc=$src, resumed after $(fmt_cs "$resumed")s; scheduler back ${back:+$(fmt_cs "$back")s after the resume}${back:-never}, reloaded $reloaded time(s), state=$(scx_state)"
  if [ "$src" -eq 0 ] && [ -n "$back" ] && [ "$back" -lt 6000 ]; then
    pass suspend_scheduler_back "$d"
  else
    fail suspend_scheduler_back "$d; log: $(tail -n 5 "$SCHED_LOG" | tr '\n' '|' | cut -c1-300)"
  fi
  # The trace: gone with its scheduler, or still recording, and then ended by us.
  if kill -0 "$tp" 2>/dev/null; then
    kill -INT "$tp" 2>/dev/null
  fi
  rel_wait_exit "$tp" 60
  d="trace rc=$REL_RC, reloaded $reloaded: $(line /tmp/susp.err | cut -c1-300); file $(wc -c </tmp/susp.json 2>/dev/null)B"
  if [ "$reloaded" -gt 0 ]; then
    want='ended: the scheduler went away'
  else
    want='ended: interrupted'
  fi
  if [ "$REL_RC" -eq 0 ] && grep -q "$want" /tmp/susp.err && [ -s /tmp/susp.json ] &&
    /bin/scx_sis_lab trace-check /tmp/susp.json >/tmp/susp.chk 2>&1; then
    pass suspend_trace_says_what_happened "$d"
  else
    fail suspend_trace_says_what_happened "want '$want': $d; check: $(line /tmp/susp.chk)"
  fi
  # The monitor printed after the resume (reconnected first if the instance changed).
  n0=$(grep -c '^{' /tmp/smon.out)
  sleep 4
  n1=$(grep -c '^{' /tmp/smon.out)
  alive=$(kill -0 "$mp" 2>/dev/null && echo yes || echo no)
  kill -TERM "$mp" 2>/dev/null
  rel_wait_exit "$mp" 10
  d="monitor alive=$alive objects $n0 -> $n1 across 4 s after the scheduler was back; rc=$REL_RC; $(line /tmp/smon.err)"
  if [ "$alive" = yes ] && [ "$n1" -gt "$n0" ] && { [ "$reloaded" -eq 0 ] || grep -q 'reconnected' /tmp/smon.err; }; then
    pass suspend_monitor_carries_on "$d"
  else
    fail suspend_monitor_carries_on "$d"
  fi
else
  info "no suspend to RAM with pm_test here ($(cat /sys/power/state 2>/dev/null)): no suspend checks"
fi

# --------------------------------------------------------------------------- sysrq-S, status 5
if ! sched_alive || [ "$(scx_state)" != enabled ]; then
  fail sched_alive_before_sysrq "daemon alive=$(sched_alive && echo yes || echo no) state=$(scx_state)"
  finish
fi
/bin/scx_sis trace --duration 600 -o /tmp/sq.json >/tmp/sq.sum 2>/tmp/sq.err &
tp=$!
wait_trace_on
hackbench -g 2 -l 10 >/dev/null 2>&1
t0=$(now_cs)
echo S >/proc/sysrq-trigger
# The log already holds the hotplug's EXIT lines: the mark is sysrq-S's own.
watch_end "$tp" 'sysrq'
rel_wait_exit "$tp" 10
trc=$REL_RC
rel_wait_exit "$SCHED_PID" 30
SCHED_PID=
d="daemon rc=$REL_RC: $(grep -m1 'error' "$SCHED_LOG" | cut -c1-160); trace rc=$trc ended $(fmt_cs "$LAG_CS")s after the daemon's sysrq-S line ($(fmt_cs "$MARK_CS")s and $(fmt_cs "$END_CS")s after sysrq-S); $(grep -m1 'records in' /tmp/sq.err); file $(wc -c </tmp/sq.json 2>/dev/null)B"
if [ "$REL_RC" -eq 5 ]; then
  pass sysrq_rc5 "$d"
else
  fail sysrq_rc5 "want rc=5: $d"
fi
if [ "$trc" -eq 0 ] && [ "$LAG_CS" -lt "$END_BOUND_CS" ] && grep -q 'ended: the scheduler went away' /tmp/sq.err && [ -s /tmp/sq.json ] &&
  /bin/scx_sis_lab trace-check /tmp/sq.json >/tmp/sq.chk 2>&1; then
  pass trace_ends_at_exit "$d"
else
  fail trace_ends_at_exit "$d; $(line /tmp/sq.err) check: $(line /tmp/sq.chk)"
fi

# --------------------------------------------------------------------------- pin directory, 8
# On a bpffs any user may write (01777, as mounted without mode=), a user makes the pin directory
# first, or points it elsewhere with a symlink: the scheduler refuses before loading anything,
# with one line naming the directory and what is wrong (status 8), and touches nothing in it or
# behind it. Unchanged, an old scheduler would have unlinked /tmp/pinvictim/tunables.
PIN=/sys/fs/bpf/scx_sis
bpf_mode=$(stat -c %a /sys/fs/bpf)
chmod 1777 /sys/fs/bpf
rm -rf "$PIN"
as_nobody pinmk "mkdir $PIN"
cap pinuser 120 /bin/scx_sis --stats-interval 0
d="rc=$CAP_RC stderr: $(line /tmp/pinuser.err); $PIN owner $(stat -c %U "$PIN" 2>/dev/null); state=$(scx_state)"
if [ "$CAP_RC" -eq 8 ] && [ "$(wc -l </tmp/pinuser.err)" -eq 1 ] && grep -q "refusing the pin directory $PIN: it is owned by uid 65534" /tmp/pinuser.err &&
  [ "$(stat -c %U "$PIN")" = nobody ] && [ "$(scx_state)" = disabled ]; then
  pass pin_dir_of_a_user_refused "$d"
else
  fail pin_dir_of_a_user_refused "$d; mkdir as nobody: rc=$(cat /tmp/pinmk.err)"
fi
rm -rf "$PIN"
mkdir -p /tmp/pinvictim
echo precious >/tmp/pinvictim/tunables
ln -s /tmp/pinvictim "$PIN"
cap pinlink 120 /bin/scx_sis --stats-interval 0
d="rc=$CAP_RC stderr: $(line /tmp/pinlink.err); victim '$(cat /tmp/pinvictim/tunables 2>/dev/null)'; state=$(scx_state)"
if [ "$CAP_RC" -eq 8 ] && [ "$(wc -l </tmp/pinlink.err)" -eq 1 ] && grep -q 'it is a symlink' /tmp/pinlink.err &&
  [ "$(cat /tmp/pinvictim/tunables)" = precious ] && [ -L "$PIN" ] && [ "$(scx_state)" = disabled ]; then
  pass pin_dir_symlink_refused "$d"
else
  fail pin_dir_symlink_refused "$d"
fi
rm -f "$PIN"
chmod "$bpf_mode" /sys/fs/bpf

# --------------------------------------------------------------------------- no kernel config, 3
# libbpf needs the kernel's config for the program's __kconfig externs, from /boot/config-R or
# /proc/config.gz. Without either the refusal names both files (one line, status 3), not a
# rejection by the kernel. A kernel with /proc/config.gz (IKCONFIG_PROC) cannot be without one.
KCONFIG=/boot/config-$(uname -r)
if [ -e /proc/config.gz ]; then
  info "this kernel has /proc/config.gz: no check without a kernel config"
elif [ -e "$KCONFIG" ]; then
  mv "$KCONFIG" /tmp/kconfig.hidden
  cap nokconf 120 /bin/scx_sis --stats-interval 0
  mv /tmp/kconfig.hidden "$KCONFIG"
  d="rc=$CAP_RC stderr: $(line /tmp/nokconf.err | cut -c1-400); state=$(scx_state)"
  if [ "$CAP_RC" -eq 3 ] && grep -q 'error: libbpf could not read the kernel.s configuration' /tmp/nokconf.err &&
    grep -qF "$KCONFIG" /tmp/nokconf.err && grep -q '/proc/config.gz' /tmp/nokconf.err &&
    [ "$(grep -c 'error' /tmp/nokconf.err)" -eq 1 ] && ! grep -q 'rejected' /tmp/nokconf.err && [ "$(scx_state)" = disabled ]; then
    pass no_kernel_config_named "$d"
  else
    fail no_kernel_config_named "$d"
  fi
else
  fail no_kernel_config_named "the VM has no $KCONFIG to hide"
fi

# --------------------------------------------------------------------------- scx_bpf_error, 6
SCX_SIS_TEST_INJECT_ERROR=1
export SCX_SIS_TEST_INJECT_ERROR
if ! start_sched --stats-interval 60; then
  fail sched_enabled_again "$SCHED_START_ERR"
  finish
fi
unset SCX_SIS_TEST_INJECT_ERROR
rel_wait_exit "$SCHED_PID" 30
SCHED_PID=
d="daemon rc=$REL_RC: $(grep -m1 'error' "$SCHED_LOG" | cut -c1-200)"
if [ "$REL_RC" -eq 6 ] && grep -q 'test-only error injected' "$SCHED_LOG"; then
  pass bpf_error_rc6 "$d"
else
  fail bpf_error_rc6 "want rc=6: $d"
fi
finish
