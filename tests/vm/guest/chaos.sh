#!/bin/sh
# Chaos: live tuning under load.
#   chaos_tunes   for SIS_CHAOS_SECS, under reliability.sh's stress-ng mix at 2x the CPUs, a
#                 random tunable changes through `scx_sis tune` SIS_CHAOS_RATE times a second (best
#                 effort: the achieved rate is reported), drawn from every tunable `tune --show`
#                 lists but those in SKIP (below), each value by its rule in pick_value. Every tune
#                 exits 0, or refuses with "nothing to change" (the value drawn was the current one).
#   chaos_fields  every tunable `tune --show` lists has a rule in pick_value or is in SKIP
#   tune_pair     then for SIS_CHAOS_PAIR_SECS two concurrent tune loops change different fields
#                 (prev-bias-threshold and sis-util-period-us); each reads its field back after
#                 every write, and at the end `tune --show` has the last value each loop wrote:
#                 no change lost to the other loop's read-modify-write
#   probe         a sleeper waking every 100 ms: its worst gap between two wakeups < SIS_CHAOS_GAP_MAX_CS
#   stress        stress-ng exits 0
#   survived      never ejected: sched_ext enabled at every sample, the same daemon alive, no
#                 restart; dmesg clean
#   wakeq_books   after the load stops and the queues drain, every wakequeue shard's books balance
#                 over the whole run (one monitor window from before the first tune to the end):
#                 enqueued == ran + left, depth 0 (judged by tests/vm/chaos.rs on the window's
#                 record, mon chaos_books)
#   then a clean unload on SIGINT.
# Env knobs: SIS_CHAOS_SECS (default 60; 600 for the long run), SIS_CHAOS_RATE (tunes a second,
# default 10), SIS_CHAOS_PAIR_SECS (default 15), SIS_CHAOS_GAP_MAX_CS (default 500 = 5 s),
# SIS_CHAOS_MIX (the stress-ng stressors, default reliability.sh's mix), SIS_SCHED_ARGS.
. /sis/lib.sh

SECS=${SIS_CHAOS_SECS:-60}
RATE=${SIS_CHAOS_RATE:-10}
PAIR_SECS=${SIS_CHAOS_PAIR_SECS:-15}
GAP_MAX=${SIS_CHAOS_GAP_MAX_CS:-500}
SIS_START_TIMEOUT=${SIS_START_TIMEOUT:-120}
N=$(nproc)
T_START=$(now_cs)

info "uname -r: $(uname -r), $N CPUs, SIS_CHAOS_SECS=$SECS rate=$RATE/s pair=${PAIR_SECS}s"
guest_open
[ -p /tmp/rel_nap.fifo ] || mkfifo /tmp/rel_nap.fifo

# The stress-ng mix of reliability.sh at 2x the CPUs: fork, pipe, futex, schedpolicy, affinity and
# yield get N/4 workers each, race-sched 1, cpu the rest.
q=$((N / 4))
[ $q -ge 1 ] || q=1
ncpu=$((2 * N - 6 * q - 1))
[ $ncpu -ge 1 ] || ncpu=1
MIX=${SIS_CHAOS_MIX:-"--cpu $ncpu --fork $q --pipe $q --futex $q --schedpolicy $q --affinity $q --yield $q --race-sched 1"}

# --------------------------------------------------------------------------- helpers
# rand_log LO HI: a number in LO..HI, about evenly spread over the doublings of LO, in RAND_V
# (no subshell: $RANDOM's state stays this shell's).
rand_log() {
  _k=0
  while [ $(($1 << (_k + 1))) -le "$2" ]; do _k=$((_k + 1)); done
  RAND_V=$(($1 << (RANDOM % (_k + 1))))
  RAND_V=$((RAND_V + (RANDOM * 32768 + RANDOM) % RAND_V))
  [ "$RAND_V" -gt "$2" ] && RAND_V=$2
  return 0
}

# pick_value FIELD: a random value for tunable FIELD in _v; 1 when there is no rule for it. A
# switch (on or off in `tune --show`, listed in SWITCHES) needs no rule of its own.
pick_value() {
  case " $SWITCHES " in
    *" $1 "*)
      if [ $((RANDOM % 2)) = 0 ]; then _v=on; else _v=off; fi
      return 0 ;;
  esac
  case $1 in
    sis-util)
      case $((RANDOM % 3)) in 0) _v=off ;; 1) _v=linear ;; *) _v=quadratic ;; esac ;;
    prev-bias-threshold) _v=$((RANDOM % 1001)) ;;
    sis-util-period-us | slice-us) rand_log 100 1000000; _v=$RAND_V ;;
    wakeq-shards) _v=$((RANDOM % 9)) ;;
    balance-lag-us) rand_log 500 100000; _v=$RAND_V ;;
    # 0 (steal whatever waits) one draw in 8, else up to 100 ms, steal.sh's longest.
    steal-min-us)
      if [ $((RANDOM % 8)) = 0 ]; then _v=0; else rand_log 100 100000; _v=$RAND_V; fi ;;
    preset) if [ $((RANDOM % 2)) = 0 ]; then _v=plain; else _v=sis; fi ;;
    *) return 1 ;;
  esac
  return 0
}

# pick_tune: a random field and value, as "--FIELD VALUE" in PICK; PICK_I is the field's index
# in FIELDS (from 1).
pick_tune() {
  PICK_I=$((RANDOM % NFIELDS + 1))
  # shellcheck disable=SC2086
  set -- $FIELDS
  shift $((PICK_I - 1))
  pick_value "$1"
  PICK="--$1 $_v"
}

# cs_secs CS: centiseconds as seconds for sleep / rel_nap ("0.07").
cs_secs() {
  if [ "$1" -lt 10 ]; then echo "0.0$1"; elif [ "$1" -lt 100 ]; then echo "0.$1"; else fmt_cs "$1"; fi
}

# chaos_loop DEADLINE_CS OUT: random tunes until DEADLINE_CS, paced at RATE a second (no catching
# up after a slow one). Writes to OUT (tune_avg/tune_max: how long one `scx_sis tune` took):
#   tunes=N ok=N noop=N err=N cs=N tune_avg=S tune_max=S (ARGS) per_field=[field:n ...] errors=[...]
chaos_loop() {
  _dl=$1 _out=$2
  _n=0 _ok=0 _noop=0 _err=0 _errl= _dsum=0 _dmax=0 _dmaxw=
  _step=$((100 / RATE))
  [ $_step -ge 1 ] || _step=1
  rel_now
  _t0=$REL_NOW
  _next=$REL_NOW
  while [ "$REL_NOW" -lt "$_dl" ]; do
    pick_tune
    _ts=$REL_NOW
    # shellcheck disable=SC2086  # word splitting intended
    /bin/scx_sis tune $PICK >/dev/null 2>/tmp/chaos_tune.err
    _rc=$?
    rel_now
    _n=$((_n + 1))
    _d=$((REL_NOW - _ts))
    _dsum=$((_dsum + _d))
    if [ $_d -gt $_dmax ]; then
      _dmax=$_d
      _dmaxw=$PICK
    fi
    eval "_pf_$PICK_I=\$((\${_pf_$PICK_I:-0} + 1))"
    if [ $_rc -eq 0 ]; then
      _ok=$((_ok + 1))
    elif grep -q 'nothing to change' /tmp/chaos_tune.err; then
      _noop=$((_noop + 1))
    else
      _err=$((_err + 1))
      [ $_err -le 3 ] && _errl="$_errl tune $PICK rc=$_rc: $(head -n 1 /tmp/chaos_tune.err | cut -c1-120);"
    fi
    _next=$((_next + _step))
    rel_now
    if [ "$REL_NOW" -lt "$_next" ]; then
      rel_nap "$(cs_secs $((_next - REL_NOW)))"
      rel_now
    else
      _next=$REL_NOW
    fi
  done
  _pfl=
  _i=0
  for _f in $FIELDS; do
    _i=$((_i + 1))
    eval "_c=\${_pf_$_i:-0}"
    _pfl="$_pfl $_f:$_c"
  done
  echo "tunes=$_n ok=$_ok noop=$_noop err=$_err cs=$((REL_NOW - _t0)) tune_avg=$(fmt_cs $((_dsum / (_n > 0 ? _n : 1))))s tune_max=$(fmt_cs $_dmax)s ($_dmaxw) per_field=[${_pfl# }] errors=[${_errl% }]" >"$_out"
}

# show_field FIELD: FIELD's value in `tune --show` (empty when it fails).
show_field() {
  /bin/scx_sis tune --show 2>/dev/null | while read -r _k _v; do
    [ "$_k" = "$1" ] && echo "$_v"
  done
}

# pair_loop FIELD FIRST LO HI DEADLINE_CS OUT: write FIELD = FIRST, FIRST+1, ... (wrapping within
# LO..HI) until DEADLINE_CS, reading it back after each write: another loop that changes only
# other fields must never make it differ. Writes to OUT:
#   field=F writes=N ok=N err=N last=V mismatches=N detail=[...]
pair_loop() {
  _f=$1 _v=$2 _lo=$3 _hi=$4 _dl=$5 _out=$6
  _n=0 _ok=0 _err=0 _mm=0 _last= _det=
  rel_now
  while [ "$REL_NOW" -lt "$_dl" ]; do
    /bin/scx_sis tune "--$_f" "$_v" >/dev/null 2>/tmp/pair_"$_f".err
    _rc=$?
    _n=$((_n + 1))
    if [ $_rc -eq 0 ]; then
      _ok=$((_ok + 1))
      _last=$_v
      _got=$(show_field "$_f")
      if [ "$_got" != "$_v" ]; then
        _mm=$((_mm + 1))
        [ $_mm -le 3 ] && _det="$_det wrote $_v read back '$_got';"
      fi
    else
      _err=$((_err + 1))
      [ $_err -le 3 ] && _det="$_det $_v rc=$_rc: $(head -n 1 /tmp/pair_"$_f".err | cut -c1-100);"
    fi
    _v=$((_v + 1))
    [ "$_v" -gt "$_hi" ] && _v=$_lo
    rel_now
  done
  echo "field=$_f writes=$_n ok=$_ok err=$_err last=$_last mismatches=$_mm detail=[${_det% }]" >"$_out"
}

# watch_until PID...: until every PID has exited, sample the sched_ext state and the daemon every
# ~0.5 s; counts samples in WATCH_SAMPLES and bad ones (not enabled, or the daemon gone or
# replaced) in WATCH_BAD, the first in WATCH_FIRST_BAD.
WATCH_SAMPLES=0
WATCH_BAD=0
WATCH_FIRST_BAD=
watch_until() {
  while :; do
    _alive=0
    for _p in "$@"; do [ -d "/proc/$_p" ] && _alive=1; done
    [ $_alive = 1 ] || break
    WATCH_SAMPLES=$((WATCH_SAMPLES + 1))
    _st=$(rel_state)
    if [ "$_st" != enabled ] || ! sched_alive || [ "$SCHED_PID" != "$DAEMON" ]; then
      WATCH_BAD=$((WATCH_BAD + 1))
      rel_now
      [ -n "$WATCH_FIRST_BAD" ] || WATCH_FIRST_BAD="state=$_st at $(fmt_cs $((REL_NOW - T_START)))s"
    fi
    rel_nap 0.5
  done
}

# --------------------------------------------------------------------------- start
# shellcheck disable=SC2086
# The wakequeue on from the start, so that its books are exercised however the draws fall.
guest_start --wakeq on --stats-interval 1 --exit-dump-len 262144 ${SIS_SCHED_ARGS:-}
DAEMON=$GUEST_DAEMON
info "$(grep -m1 '^policy:' "$SCHED_LOG" | cut -c1-300)"

# The tunables to draw from: every name `tune --show` lists, but SKIP's:
#   trace       `scx_sis trace` switches it; `tune` has no flag for it
#   generation  the count of changes, not a tunable
SKIP="trace generation"
FIELDS=
SWITCHES=
fields_err=
if /bin/scx_sis tune --show >/tmp/chaos_show 2>/tmp/chaos_show.err; then
  while read -r show_k show_v; do
    case " $SKIP " in *" $show_k "*) continue ;; esac
    case $show_v in on | off) SWITCHES="$SWITCHES $show_k" ;; esac
    if pick_value "$show_k"; then
      FIELDS="$FIELDS $show_k"
    else
      fields_err="$fields_err $show_k ($show_v)"
    fi
  done </tmp/chaos_show
else
  fields_err=" (tune --show failed: $(head -n 1 /tmp/chaos_show.err))"
fi
FIELDS=${FIELDS# }
# shellcheck disable=SC2086
set -- $FIELDS
NFIELDS=$#
if [ -n "$fields_err" ] || [ "$NFIELDS" -eq 0 ]; then
  fail chaos_fields "tunables neither drawn (a rule in pick_value) nor in SKIP:${fields_err:- none, but none to draw}"
  [ "$NFIELDS" -gt 0 ] || { stop_sched; finish; }
else
  pass chaos_fields "drawn: $FIELDS; skipped: $SKIP"
fi
STARTS0=$(rel_count 'scx_sis on kernel' "$SCHED_LOG")
RESTARTS0=$(rel_count 'asked for a restart' "$SCHED_LOG")

# The books' window: from before the first tune to after the drain.
mon_window_start /tmp/chaos_mon
BOOKS_MON=$MON_WIN_PID

# The probe: wakes every 100 ms, records its worst gap (centiseconds).
rm -f /tmp/chaos.stop
(
  rel_now
  _last=$REL_NOW _max=0 _n=0
  while [ ! -e /tmp/chaos.stop ]; do
    rel_nap 0.1
    rel_now
    _g=$((REL_NOW - _last))
    _last=$REL_NOW
    _n=$((_n + 1))
    if [ $_g -gt $_max ]; then
      _max=$_g
      echo "wakes=$_n max_gap_cs=$_max at=$REL_NOW" >/tmp/chaos_probe
    fi
  done
  echo "wakes=$_n max_gap_cs=$_max" >/tmp/chaos_probe
) &
PROBE=$!

# The load, for the chaos and the pair phases.
T_LOAD=$(now_cs)
# shellcheck disable=SC2086
stress-ng $MIX --timeout "$((SECS + PAIR_SECS))s" --metrics-brief >/tmp/chaos_stress 2>&1 &
STRESS=$!
info "stress-ng $MIX --timeout $((SECS + PAIR_SECS))s (pid $STRESS)"
sleep 2

# --------------------------------------------------------------------------- chaos
GEN0=$(show_field generation)
chaos_loop $(($(now_cs) + SECS * 100)) /tmp/chaos_tunes &
CHAOS=$!
watch_until $CHAOS
wait $CHAOS
CH=$(cat /tmp/chaos_tunes)
set -- $CH
ch_n=${1#tunes=} ch_ok=${2#ok=} ch_noop=${3#noop=} ch_err=${4#err=} ch_cs=${5#cs=}
# Tunes a second with one decimal, rounded.
rate=0.0
[ "$ch_cs" -gt 0 ] && rate=$(((ch_n * 10000 / ch_cs + 5) / 10)) && rate=$((rate / 10)).$((rate % 10))
GEN1=$(show_field generation)
d="$ch_n tunes in $(fmt_cs "$ch_cs")s = $rate/s (wanted $RATE/s), generation $GEN0 -> $GEN1; $CH"
if [ "$ch_n" -gt 0 ] && [ "$ch_err" = 0 ]; then
  pass chaos_tunes "$d"
else
  fail chaos_tunes "want >= 1 tune and err=0: $d"
fi
info "tunables after the chaos: $(/bin/scx_sis tune --show 2>&1 | tr -s ' \n' ' ')"

# --------------------------------------------------------------------------- two concurrent tuners
rel_now
PDL=$((REL_NOW + PAIR_SECS * 100))
thr=$(show_field prev-bias-threshold)
per=$(show_field sis-util-period-us)
thr=$(((${thr:-0} + 1) % 1001))
per=${per:-999}
if [ "$per" -ge 1000 ] && [ "$per" -lt 9999 ]; then per=$((per + 1)); else per=1000; fi
GP0=$(show_field generation)
pair_loop prev-bias-threshold "$thr" 0 1000 $PDL /tmp/pair_a &
PA=$!
pair_loop sis-util-period-us "$per" 1000 9999 $PDL /tmp/pair_b &
PB=$!
watch_until $PA $PB
wait $PA $PB
A=$(cat /tmp/pair_a)
B=$(cat /tmp/pair_b)
GP1=$(show_field generation)
got_thr=$(show_field prev-bias-threshold)
got_per=$(show_field sis-util-period-us)
last_a=$(echo "$A" | sed -n 's/.* last=\([0-9]*\) .*/\1/p')
last_b=$(echo "$B" | sed -n 's/.* last=\([0-9]*\) .*/\1/p')
ok_a=$(echo "$A" | sed -n 's/.* ok=\([0-9]*\) .*/\1/p')
ok_b=$(echo "$B" | sed -n 's/.* ok=\([0-9]*\) .*/\1/p')
d="${PAIR_SECS}s: tune --show prev-bias-threshold=$got_thr (last written $last_a) sis-util-period-us=$got_per (last written $last_b); generation $GP0 -> $GP1 = +$((${GP1:-0} - ${GP0:-0})) for $((${ok_a:-0} + ${ok_b:-0})) successful tunes | $A | $B"
if [ -n "$last_a" ] && [ -n "$last_b" ] && [ "$got_thr" = "$last_a" ] && [ "$got_per" = "$last_b" ] &&
  echo "$A" | grep -q ' err=0 .* mismatches=0 ' && echo "$B" | grep -q ' err=0 .* mismatches=0 '; then
  pass tune_pair "$d"
else
  fail tune_pair "want the last values in tune --show, err=0 and mismatches=0 in both loops: $d"
fi

# --------------------------------------------------------------------------- the load ends
rel_wait_exit $STRESS $((SECS + PAIR_SECS + 120))
src=$REL_RC
d="stress-ng $MIX ${SECS}+${PAIR_SECS}s rc=$src wall=$(fmt_cs $(($(now_cs) - T_LOAD)))s"
grep -E 'stress-ng: (info|metrc).* (cpu|fork|pipe|futex|schedpolicy|affinity|yield|race-sched) ' /tmp/chaos_stress |
  sed 's/^/SIS-INFO stress: /' | head -n 12
if [ "$src" -eq 0 ]; then pass stress "$d"; else fail stress "$d: $(tail -n 5 /tmp/chaos_stress | tr '\n' '|')"; fi

touch /tmp/chaos.stop
rel_wait_exit $PROBE 30
P=$(cat /tmp/chaos_probe 2>/dev/null)
gap=$(echo "$P" | sed -n 's/.*max_gap_cs=\([0-9]*\).*/\1/p')
d="a sleeper waking every 100 ms through the load: $P (worst gap $(fmt_cs "${gap:-0}")s, bound $(fmt_cs "$GAP_MAX")s)"
if [ -n "$gap" ] && [ "$gap" -lt "$GAP_MAX" ]; then pass probe "$d"; else fail probe "$d"; fi

# Drain: a sane SIS_UTIL period again so the depth gauges are fresh, then let the queues empty.
/bin/scx_sis tune --sis-util-period-us 4000 >/dev/null 2>&1
sleep 3
MON_WIN_PID=$BOOKS_MON
MON_WIN_FILE=/tmp/chaos_mon
mon_window_stop chaos_books

# --------------------------------------------------------------------------- survived
ej=$(rel_ejections $((GUEST_DMESG0 + 1)))
r1=$(rel_count 'asked for a restart' "$SCHED_LOG")
s1=$(rel_count 'scx_sis on kernel' "$SCHED_LOG")
d="state=$(rel_state) at the end, $WATCH_BAD of $WATCH_SAMPLES samples not enabled/daemon gone${WATCH_FIRST_BAD:+ (first: $WATCH_FIRST_BAD)}; daemon pid $DAEMON alive=$(sched_alive && echo yes || echo no) ejections=$ej restarts=$((r1 - RESTARTS0)) starts=$((s1 - STARTS0)) tunables lines=$(rel_count 'tunables generation' "$SCHED_LOG")"
if [ "$(rel_state)" = enabled ] && sched_alive && [ "$SCHED_PID" = "$DAEMON" ] && [ "$WATCH_BAD" = 0 ] &&
  [ "$ej" = 0 ] && [ "$r1" = "$RESTARTS0" ] && [ "$s1" = "$STARTS0" ]; then
  pass survived "$d"
else
  fail survived "$d"
  if ! sched_alive && grep -q 'DEBUG DUMP' "$SCHED_LOG"; then
    sed -n '/DEBUG DUMP/,$p' "$SCHED_LOG" | head -n 400
  fi
fi
guest_close dmesg_clean sigint_unload
info "chaos took $(fmt_cs $(($(now_cs) - T_START)))s"
finish
