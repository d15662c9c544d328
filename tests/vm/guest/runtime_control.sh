#!/bin/sh
# Runtime control and per-LLC stats: `scx_sis tune` switches prev-bias live and `monitor --json`
# shows the prev_almost_idle path stop and resume; invalid tunes change nothing; a SIGKILLed
# daemon leaves sched_ext disabled and a stale pin that the next instance replaces; a second
# instance is refused; `tune` without an instance says so.
# Each `monitor --json` object is a record (mon <phase>, its rc kv <phase>_rc) that
# tests/vm/runtime_control.rs decodes and judges: one entry per LLC, prev_almost_idle and the
# tunables' generation in each phase.
# Env knobs: SIS_PREV_BIAS_THRESHOLD (default 500 per-mille), SIS_WORKLOAD (default: wakelat).
. /sis/lib.sh

PIN=/sys/fs/bpf/scx_sis/tunables
THRESH=${SIS_PREV_BIAS_THRESHOLD:-500}

info "uname -r: $(uname -r)"
guest_open
t_start=$(now_cs)

# sample PHASE: one `monitor --json --interval 2 --count 1` object as record mon PHASE, its rc
# as kv PHASE_rc, its stderr as text PHASE.
sample() {
  CAP_OUT=/tmp/mon.out CAP_ERR=/tmp/mon.err run_capped 60 /bin/scx_sis monitor --json --interval 2 --count 1
  rec kv "${1}_rc" "rc=$?"
  rec_mon "$1" /tmp/mon.out
  rec_mon "$1" /tmp/mon.err
}

oneline() { tr '\n' '|' <"$1" | cut -c1-300; }

# --------------------------------------------------------------------------- start + workload
guest_start --prev-bias-threshold "$THRESH" --stats-interval 5
# shellcheck disable=SC2086  # word splitting intended
start_bg_loop ${SIS_WORKLOAD:-/bin/scx_sis_lab wakelat --runtime 4 --warmup 0}
info "workload loop pid $BG_LOOP_PID: ${SIS_WORKLOAD:-/bin/scx_sis_lab wakelat --runtime 4 --warmup 0}"
sleep 1

# --------------------------------------------------------------------------- prev-bias on
sample on

# --------------------------------------------------------------------------- prev-bias off
tune --prev-bias off
if [ "$TUNE_RC" -eq 0 ] && grep -qx 'prev-bias: on -> off' "$TUNE_OUT"; then
  pass tune_prev_bias_off "rc=0 stdout: $(oneline "$TUNE_OUT")"
else
  fail tune_prev_bias_off "rc=$TUNE_RC stdout: $(oneline "$TUNE_OUT") stderr: $(oneline "$TUNE_ERR")"
fi
t0=$(now_cs)
if wait_log 'tunables generation 2: prev-bias: on -> off' 10; then
  pass tune_logged_off "daemon logged '$(grep -m1 'tunables generation 2' "$SCHED_LOG")' within $(fmt_cs $(($(now_cs) - t0)))s"
else
  fail tune_logged_off "no 'tunables generation 2: prev-bias: on -> off' in the log after 10s; tunables lines: $(grep 'tunables generation' "$SCHED_LOG" | tr '\n' '|')"
fi
sample off

# --------------------------------------------------------------------------- prev-bias on again
tune --prev-bias on
t0=$(now_cs)
if [ "$TUNE_RC" -eq 0 ] && grep -qx 'prev-bias: off -> on' "$TUNE_OUT" &&
  wait_log 'tunables generation 3: prev-bias: off -> on' 10; then
  pass tune_prev_bias_on "rc=0 stdout: $(oneline "$TUNE_OUT"), logged within $(fmt_cs $(($(now_cs) - t0)))s"
else
  fail tune_prev_bias_on "rc=$TUNE_RC stdout: $(oneline "$TUNE_OUT") stderr: $(oneline "$TUNE_ERR"); tunables lines: $(grep 'tunables generation' "$SCHED_LOG" | tr '\n' '|')"
fi
sample on_again

# --------------------------------------------------------------------------- invalid tunes
tune --show
show_rc0=$TUNE_RC
cp "$TUNE_OUT" /tmp/show.before
# check_invalid NAME BADVALUE ARGS...: rc != 0, nothing on stdout, exactly one stderr line
# saying "error" and naming BADVALUE.
check_invalid() {
  _n=$1 _bad=$2
  shift 2
  tune "$@"
  _errs=$(grep -c 'error' "$TUNE_ERR")
  _d="tune $* rc=$TUNE_RC stdout=$(wc -c <"$TUNE_OUT")B error_lines=$_errs stderr_lines=$(wc -l <"$TUNE_ERR"): $(grep -m1 'error' "$TUNE_ERR" | cut -c1-200)"
  if [ "$TUNE_RC" -ne 0 ] && [ "$TUNE_RC" -ne 137 ] && [ ! -s "$TUNE_OUT" ] && [ "$_errs" -eq 1 ] &&
    grep 'error' "$TUNE_ERR" | grep -qF -- "$_bad"; then
    pass "$_n" "$_d"
  else
    fail "$_n" "$_d | $(oneline "$TUNE_ERR")"
  fi
}
check_invalid tune_invalid_threshold 5000 --prev-bias-threshold 5000
check_invalid tune_invalid_curve cubic --sis-util cubic
tune --show
if [ "$show_rc0" -eq 0 ] && [ "$TUNE_RC" -eq 0 ] && [ -s /tmp/show.before ] && cmp -s /tmp/show.before "$TUNE_OUT" &&
  ! grep -q 'tunables generation 4' "$SCHED_LOG"; then
  pass tune_show_unchanged "rc=0/0, $(wc -c <"$TUNE_OUT") bytes identical: $(tr -s ' \n' ' ' <"$TUNE_OUT")"
else
  fail tune_show_unchanged "rc=$show_rc0/$TUNE_RC before: $(tr -s ' \n' ' ' </tmp/show.before) after: $(tr -s ' \n' ' ' <"$TUNE_OUT") log: $(grep 'tunables generation 4' "$SCHED_LOG")"
fi

# --------------------------------------------------------------------------- second instance
ops=$(scx_ops)
t0=$(now_cs)
CAP_OUT=/tmp/second.out CAP_ERR=/tmp/second.err run_capped 60 /bin/scx_sis --stats-interval 10
rc=$?
d="rc=$rc after $(fmt_cs $(($(now_cs) - t0)))s, stderr: $(oneline /tmp/second.err); first instance alive=$(sched_alive && echo yes || echo no) state=$(scx_state) ops=$(scx_ops) pin=$([ -e $PIN ] && echo present || echo missing)"
if [ $rc -ne 0 ] && [ $rc -ne 137 ] && [ -n "$ops" ] && grep -q 'already loaded' /tmp/second.err &&
  grep -qF -- "$ops" /tmp/second.err && sched_alive && [ "$(scx_state)" = enabled ] && [ -e $PIN ]; then
  pass second_instance_refused "$d"
else
  fail second_instance_refused "want rc!=0 naming '$ops', first instance untouched; $d"
fi

# --------------------------------------------------------------------------- SIGKILL
cp "$SCHED_LOG" /tmp/sched.first.log
killed_pid=$SCHED_PID
t0=$(now_cs)
kill -KILL "$killed_pid"
wait_state disabled 10
st=$(scx_state)
t_dis=$(fmt_cs $(($(now_cs) - t0)))
wait "$killed_pid"
krc=$?
SCHED_PID=
if [ "$st" = disabled ]; then
  pass sigkill_disables "state=disabled ${t_dis}s after SIGKILL (daemon rc=$krc); dmesg: $(dmesg | grep -i 'sched_ext' | tail -n 1 | sed 's/^\[[^]]*\] *//')"
else
  fail sigkill_disables "state=$st ${t_dis}s after SIGKILL (daemon rc=$krc)"
fi
if [ -e "$PIN" ]; then
  pass sigkill_stale_pin "$PIN left behind (no scheduler loaded, state=$(scx_state))"
else
  fail sigkill_stale_pin "$PIN missing after SIGKILL (expected a stale pin); /sys/fs/bpf: $(find /sys/fs/bpf | tr '\n' ' ')"
fi
tune --show
if [ "$TUNE_RC" -ne 0 ] && [ "$TUNE_RC" -ne 137 ] && grep -q 'no scx_sis instance is running' "$TUNE_ERR"; then
  pass tune_stale_pin "stale pin, no scheduler: rc=$TUNE_RC $(oneline "$TUNE_ERR")"
else
  fail tune_stale_pin "stale pin, no scheduler: rc=$TUNE_RC stdout: $(oneline "$TUNE_OUT") stderr: $(oneline "$TUNE_ERR")"
fi
if [ "$SIS_FAILS" -ne 0 ]; then
  echo "----- first instance's log -----"
  tail -n 60 /tmp/sched.first.log
  echo "----- end -----"
fi

# --------------------------------------------------------------------------- restart
if start_sched --stats-interval 5; then
  if grep -q 'replacing the stale pin' "$SCHED_LOG" && [ -e "$PIN" ]; then
    pass restart_after_kill "state=enabled ops=$(scx_ops) after $(fmt_cs "$SCHED_START_CS")s; log: $(grep -m1 'stale pin' "$SCHED_LOG" | cut -c1-160)"
  else
    fail restart_after_kill "enabled, but the log does not mention replacing the stale pin (or $PIN missing): $(head -n 5 "$SCHED_LOG" | tr '\n' '|')"
  fi
  tune --show
  thr= gen=
  while read -r _k _v; do
    case $_k in prev-bias-threshold) thr=$_v ;; generation) gen=$_v ;; esac
  done <"$TUNE_OUT"
  if [ "$TUNE_RC" -eq 0 ] && [ "$thr" = 1 ] && [ "$gen" = 1 ] && grep -q '^prev-bias  *on$' "$TUNE_OUT"; then
    pass restart_tune_show "rc=0, the new map's defaults (not the stale pin's threshold=$THRESH generation=3): $(tr -s ' \n' ' ' <"$TUNE_OUT")"
  else
    fail restart_tune_show "rc=$TUNE_RC want prev-bias-threshold=1 generation=1, got threshold=$thr generation=$gen: $(tr -s ' \n' ' ' <"$TUNE_OUT") $(oneline "$TUNE_ERR")"
  fi
  sample restarted

  t0=$(now_cs)
  stop_sched 20
  rc=$?
  wait_state disabled 5
  d="rc=$rc state=$(scx_state) after $(fmt_cs $(($(now_cs) - t0)))s, pin $([ -e "$PIN" ] && echo present || echo removed), $(dirname "$PIN") $([ -d "$(dirname "$PIN")" ] && echo present || echo removed)"
  if [ $rc -eq 0 ] && [ "$(scx_state)" = disabled ] && [ ! -e "$PIN" ]; then
    pass sigint_unload "$d"
  else
    fail sigint_unload "$d"
  fi
else
  fail restart_after_kill "$SCHED_START_ERR; log: $(head -n 5 "$SCHED_LOG" | tr '\n' '|')"
fi

# --------------------------------------------------------------------------- no instance
tune --show
if [ "$TUNE_RC" -ne 0 ] && [ "$TUNE_RC" -ne 137 ] && grep -q 'no scx_sis instance is running' "$TUNE_ERR" && [ ! -s "$TUNE_OUT" ]; then
  pass tune_no_instance "rc=$TUNE_RC stderr: $(oneline "$TUNE_ERR")"
else
  fail tune_no_instance "rc=$TUNE_RC stdout: $(oneline "$TUNE_OUT") stderr: $(oneline "$TUNE_ERR")"
fi

# --------------------------------------------------------------------------- as the unit starts it
# SIS_UNIT_EXEC is packaging/scx_sis.service's ExecStart with /etc/default/scx_sis's flags
# substituted (the host reads both files), so the service's exact command line is what loads here;
# systemd stops a unit with SIGTERM.
if [ -n "${SIS_UNIT_EXEC:-}" ]; then
  # Where /usr/bin is not /bin itself (a link in some initramfs layouts), give it the binary.
  [ -e /usr/bin/scx_sis ] || { mkdir -p /usr/bin && ln -s /bin/scx_sis /usr/bin/scx_sis; }
  t0=$(now_cs)
  # shellcheck disable=SC2086  # the ExecStart line is split into words, as systemd does
  $SIS_UNIT_EXEC >/tmp/unit.log 2>&1 &
  unit_pid=$!
  # 150 s: under TCG on a loaded host, 6.12's verifier alone can take minutes.
  unit_deadline=$(($(now_cs) + 15000))
  while [ "$(scx_state)" != enabled ] && [ -d "/proc/$unit_pid" ] && [ "$(now_cs)" -lt "$unit_deadline" ]; do
    sleep 0.2
  done
  if [ "$(scx_state)" = enabled ]; then
    kill -TERM "$unit_pid"
    wait "$unit_pid"
    rc=$?
    wait_state disabled 5
    d="'$SIS_UNIT_EXEC': enabled after $(fmt_cs $(($(now_cs) - t0)))s, SIGTERM rc=$rc state=$(scx_state)"
    if [ $rc -eq 0 ] && [ "$(scx_state)" = disabled ] && ! grep -q '^libbpf:' /tmp/unit.log; then
      pass unit_exec_start "$d, no libbpf line"
    else
      fail unit_exec_start "$d; log: $(grep -m 3 -e '^libbpf:' -e error /tmp/unit.log | tr '\n' '|')"
    fi
  else
    kill -KILL "$unit_pid" 2>/dev/null
    wait "$unit_pid" 2>/dev/null
    fail unit_exec_start "'$SIS_UNIT_EXEC' not enabled (exited, or 150 s passed); log: $(tail -n 3 /tmp/unit.log | tr '\n' '|')"
  fi
else
  fail unit_exec_start "SIS_UNIT_EXEC not set by the host"
fi

# --------------------------------------------------------------------------- workload, dmesg
check_bg_loop workload 30 runs
guest_close dmesg_clean
info "runtime_control took $(fmt_cs $(($(now_cs) - t_start)))s"
finish
