# shellcheck shell=sh
# Helpers only reliability.sh uses (it sources this after lib.sh). Like lib.sh's rel_* helpers they
# fork nothing in their loops: see lib.sh.

# rel_progress PID [FILE]: the counter in FILE if given, else PID's CPU ticks, in REL_PROG. The
# counter is rewritten in place (`echo $i >FILE`): an empty read is a write in progress, so read
# again; a missing file is 0.
rel_progress() {
  REL_PROG=0
  if [ -n "${2:-}" ]; then
    _pr=
    for _ in 1 2 3 4 5; do
      [ -e "$2" ] || break
      read -r _pr 2>/dev/null <"$2"
      [ -n "$_pr" ] && break
      rel_nap 0.01
    done
    REL_PROG=${_pr:-0}
  elif rel_ticks "$1"; then
    REL_PROG=$REL_TICKS
  fi
}

# rel_rss_kb PID: prints VmRSS in kB (0 when PID is gone).
rel_rss_kb() {
  _rss=0
  if [ -r "/proc/$1/status" ]; then
    while read -r _k _v _; do
      [ "$_k" = VmRSS: ] && _rss=$_v
    done 2>/dev/null <"/proc/$1/status"
  fi
  echo "$_rss"
}

# rel_in_list CPU LIST: true when CPU is in the cpulist LIST ("0-3,6").
rel_in_list() {
  _c=$1
  [ -n "$_c" ] || return 1
  _ifs=$IFS
  IFS=,
  # shellcheck disable=SC2086
  set -- $2
  IFS=$_ifs
  for _r in "$@"; do
    case $_r in
      *-*) [ "$_c" -ge "${_r%-*}" ] && [ "$_c" -le "${_r#*-}" ] && return 0 ;;
      *) [ "$_c" = "$_r" ] && return 0 ;;
    esac
  done
  return 1
}

# rel_rt_on LIST: user tasks with an RT or deadline policy (stat field 41: 1 FIFO, 2 RR, 6 DEADLINE)
# running on a CPU of LIST (state R, field 39), as "pid:comm:policy@cpu" words in REL_RT. Such a
# task holds its CPU above sched_ext: stress-ng's schedpolicy and race-sched workers become one.
# Kernel threads (ppid 2) are left out: migration/N and the like run for microseconds.
rel_rt_on() {
  REL_RT=
  _rl=$1
  for _d in /proc/[0-9]*; do
    _p=${_d#/proc/}
    rel_stat "$_p" || continue
    # shellcheck disable=SC2086  # word splitting intended
    set -- $REL_STAT
    case ${39} in 1 | 2 | 6) ;; *) continue ;; esac
    [ "$1" = R ] && [ "$2" != 2 ] && rel_in_list "${37}" "$_rl" || continue
    read -r _rc 2>/dev/null <"$_d/comm"
    REL_RT="$REL_RT $_p:$_rc:${39}@${37}"
  done
  REL_RT=${REL_RT# }
}

# rel_spinner [CPULIST]: start a busy loop (pinned to CPULIST if given). Sets REL_PID.
rel_spinner() {
  if [ -n "${1:-}" ]; then
    taskset -c "$1" sh -c 'while :; do :; done' &
  else
    sh -c 'while :; do :; done' &
  fi
  REL_PID=$!
}

# rel_sleeper FILE [CPULIST]: start a loop that counts its rounds into FILE and sleeps 50 ms per
# round (pinned to CPULIST if given). Sets REL_PID.
rel_sleeper() {
  if [ -n "${2:-}" ]; then
    # shellcheck disable=SC2016  # expanded by the child shell
    taskset -c "$2" sh -c 'i=0; while :; do i=$((i + 1)); echo $i >"$0"; sleep 0.05; done' "$1" &
  else
    # shellcheck disable=SC2016
    sh -c 'i=0; while :; do i=$((i + 1)); echo $i >"$0"; sleep 0.05; done' "$1" &
  fi
  REL_PID=$!
}

# rel_mover PID DEADLINE_CS OUT COUNTERFILE|- LIST...: until DEADLINE_CS (now_cs scale), set PID's
# affinity to each LIST in turn (taskset -p, from this other process), wait until PID made progress
# twice (2 counts in COUNTERFILE, or 2 CPU ticks for "-") so that it ran after the change, then
# check that the CPU it last ran on (stat field 39) is in LIST. A change not followed by progress
# within 20 s is "stuck", unless an RT or deadline task then held LIST's CPUs ("held": sched_ext
# gets only what RT throttling or its deadline server leaves there, on any ext scheduler).
# Writes one line to OUT:
#   changes=N bad_cpu=N stuck=N held=N wait_avg=S wait_max=S bad=[cpu@list ...]
rel_mover() {
  _mp=$1 _md=$2 _mo=$3 _mf=${4#-}
  shift 4
  _n=0 _bad=0 _stuck=0 _held=0 _wsum=0 _wmax=0 _badl=
  rel_now
  while [ "$REL_NOW" -lt "$_md" ] && [ -d "/proc/$_mp" ]; do
    for _ml in "$@"; do
      rel_now
      [ "$REL_NOW" -ge "$_md" ] && break
      taskset -p -c "$_ml" "$_mp" >/dev/null 2>&1 || break 2
      rel_now
      _t0=$REL_NOW
      rel_progress "$_mp" "$_mf"
      _p0=$REL_PROG
      _ok=0
      while [ $((REL_NOW - _t0)) -lt 2000 ]; do
        rel_progress "$_mp" "$_mf"
        [ "$REL_PROG" -ge $((_p0 + 2)) ] && { _ok=1; break; }
        rel_nap 0.02
        rel_now
      done
      rel_now
      _w=$((REL_NOW - _t0))
      _n=$((_n + 1))
      if [ $_ok = 1 ]; then
        _wsum=$((_wsum + _w))
        [ $_w -gt $_wmax ] && _wmax=$_w
        rel_cpu "$_mp"
        if ! rel_in_list "$REL_CPU" "$_ml"; then
          _bad=$((_bad + 1))
          _badl="$_badl $REL_CPU@$_ml"
        fi
      else
        rel_rt_on "$_ml"
        if [ -n "$REL_RT" ]; then
          _held=$((_held + 1))
          _badl="$_badl held@$_ml($REL_RT)"
        else
          _stuck=$((_stuck + 1))
          _badl="$_badl stuck@$_ml"
        fi
      fi
    done
  done
  _ok_n=$((_n - _stuck - _held))
  [ $_ok_n -gt 0 ] || _ok_n=1
  echo "changes=$_n bad_cpu=$_bad stuck=$_stuck held=$_held wait_avg=$(fmt_cs $((_wsum / _ok_n)))s wait_max=$(fmt_cs $_wmax)s bad=[$(echo "${_badl# }" | cut -c1-300)]" >"$_mo"
}

# rel_sampler DEADLINE_CS OUT PID:CPULIST...: every ~0.3 s until DEADLINE_CS, check that each PID
# that ran since the previous sample (its /proc/PID/schedstat run count moved) last ran on a CPU
# (stat field 39) in its CPULIST. A task that did not run keeps the CPU it last ran on, which may
# predate its affinity (kthreads are created on CPU 0, then bound), so it is not checked. PIDs that
# are gone are skipped. Writes to OUT:
#   samples=N checked=N bad=N bad_at=[pid:cpu@list ...]
rel_sampler() {
  _sd=$1 _so=$2
  shift 2
  _sn=0 _sc=0 _sb=0 _sbl=
  rel_now
  while [ "$REL_NOW" -lt "$_sd" ]; do
    _sn=$((_sn + 1))
    for _e in "$@"; do
      _pid=${_e%%:*}
      _ss=
      read -r _ _ _ss 2>/dev/null <"/proc/$_pid/schedstat" || continue
      eval "_prev=\${_rsp_$_pid:-}"
      eval "_rsp_$_pid=\$_ss"
      if [ -z "$_prev" ] || [ "$_prev" = "$_ss" ]; then continue; fi
      rel_cpu "$_pid" || continue
      _sc=$((_sc + 1))
      if ! rel_in_list "$REL_CPU" "${_e#*:}"; then
        _sb=$((_sb + 1))
        _sbl="$_sbl $_pid:$REL_CPU@${_e#*:}"
      fi
    done
    rel_nap 0.3
    rel_now
  done
  echo "samples=$_sn checked=$_sc bad=$_sb bad_at=[$(echo "${_sbl# }" | cut -c1-300)]" >"$_so"
}

# rel_kworker_load DEADLINE_CS OUT: until DEADLINE_CS, write /proc/sys/vm/stat_refresh every
# ~0.3 s. Each write runs refresh_vm_stats on every CPU's bound kworker (schedule_on_each_cpu)
# and returns only when all of them ran, so it measures how long per-CPU kworkers wait.
# Writes to OUT: writes=N failed=N avg=S max=S max_cs=N
rel_kworker_load() {
  _kd=$1 _ko=$2
  _kn=0 _kf=0 _ks=0 _km=0
  rel_now
  while [ "$REL_NOW" -lt "$_kd" ]; do
    _t0=$REL_NOW
    echo 1 >/proc/sys/vm/stat_refresh 2>/dev/null || _kf=$((_kf + 1))
    rel_now
    _w=$((REL_NOW - _t0))
    _kn=$((_kn + 1))
    _ks=$((_ks + _w))
    [ $_w -gt $_km ] && _km=$_w
    rel_nap 0.3
    rel_now
  done
  [ $_kn -gt 0 ] || _kn=1
  echo "writes=$_kn failed=$_kf avg=$(fmt_cs $((_ks / _kn)))s max=$(fmt_cs $_km)s max_cs=$_km" >"$_ko"
}

# rel_kthreads: "pid:cpu" for every per-CPU kthread we can name: ksoftirqd/N and bound kworkers
# kworker/N:M (not the unbound kworker/uN:M).
rel_kthreads() {
  for _d in /proc/[0-9]*; do
    _comm=
    read -r _comm 2>/dev/null <"$_d/comm" || continue
    case $_comm in
      ksoftirqd/*) echo "${_d#/proc/}:${_comm#ksoftirqd/}" ;;
      kworker/u*) ;;
      kworker/[0-9]*:*) _k=${_comm#kworker/}; echo "${_d#/proc/}:${_k%%:*}" ;;
    esac
  done
}

# rec_hackbench NAME ARGS...: hackbench ARGS; its rc and wall time as record kv NAME, its output
# as text records NAME (reliability.rs wants rc 0 and a Time line).
rec_hackbench() {
  _hn=$1
  shift
  _t0=$(now_cs)
  hackbench "$@" >/tmp/hackbench.out 2>&1
  rec kv "$_hn" "rc=$? wall_cs=$(($(now_cs) - _t0)) args=[$*]"
  rec_lines text "$_hn" /tmp/hackbench.out
}
