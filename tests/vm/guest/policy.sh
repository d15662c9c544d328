#!/bin/sh
# Placement policies of scx_sis, measured in one boot (issue "Placement policies of the seeds").
#
#   prev_bias_migrations  prev-bias on cuts the migrations of a wakeup-heavy workload: perf stat
#                         cpu-migrations per context switch, medians of alternating on/off runs,
#                         switched live with `scx_sis tune`
#   sis_util_*            SIS_UTIL curves: an idle LLC is scanned whole; under CPU hogs on every
#                         CPU quadratic stops the scan (nr_scan 0, nothing visited), linear keeps
#                         4 CPUs (or the LLC if smaller), off the whole LLC
#   affinity_*            seed 002's corner case (Chen Yu's SIS_UTIL thread): hogs bound to every
#                         CPU of the LLC but one. Shows what each curve does for unbound tasks
#                         (depth, hit rate, paths) and checks that none of them waits while that
#                         CPU is idle. Needs one LLC with >= 7 CPUs (--topo 1llc); skipped otherwise.
#
# Env: SIS_POL_CHECKS      checks to run, default "prevbias curves affinity"
#      SIS_POL_REPS        runs per setting for prev_bias_migrations, default 5
#      SIS_POL_PB_RATIO    pass if median(migrations/cs) on <= RATIO x off, default 0.75
#      SIS_POL_PB_THRESHOLD  prev-bias threshold (per-mille) for that check, default: scx_sis's
#      SIS_POL_PB_WORKLOAD the workload for it (a command line)
#      SIS_SCHED_ARGS      extra scx_sis arguments
#
# The affinity checks keep the daemon (it wakes every 100 ms) and this shell on CPU 0 (no hog
# there), so the one CPU left without a hog is really idle.
. /tests/lib.sh

POL_CHECKS=${SIS_POL_CHECKS:-prevbias curves affinity}
POL_NCPU=$(nproc)
POL_LAST=$((POL_NCPU - 1))
POL_FIFO=/tmp/pol_fifo
POL_MON_PID=
POL_BG=

# --------------------------------------------------------------------------- helpers (pol_*)

# pol_field JSON LLC NAME: the number NAME in LLC's object of a `monitor --json` line ("" if absent).
pol_field() {
  printf '%s\n' "$1" | awk -v L="$2" -v F="$3" '{
    i = index($0, "\"" L "\":{\"cpus\""); if (!i) { print ""; exit }
    s = substr($0, i); j = index(s, "\"select_ns_hist\""); if (j) s = substr(s, 1, j)
    k = index(s, "\"" F "\":"); if (!k) { print ""; exit }
    s = substr(s, k + length(F) + 3)
    if (match(s, /^-?[0-9.eE+]+/)) print substr(s, 1, RLENGTH); else print "" }'
}

# pol_llcs JSON: the LLC indices of a monitor line.
pol_llcs() {
  printf '%s\n' "$1" | awk '{ s = $0
    while (match(s, /"[0-9]+":\{"cpus"/)) {
      t = substr(s, RSTART + 1); sub(/".*/, "", t); printf "%s ", t; s = substr(s, RSTART + RLENGTH) } }'
}

# pol_jsum JSON NAME: NAME summed over the LLCs of one monitor line (json_sum of lib.sh: every
# counter policy.sh reads appears only in the LLC objects).
pol_jsum() { printf '%s\n' "$1" | json_sum "$2"; }

# pol_snap SECS: one `monitor --json` report covering SECS seconds (counters are deltas over them;
# cpus, util_pct and nr_scan are gauges at its end).
pol_snap() { /bin/scx_sis monitor --json --interval "$1" --count 1 2>/dev/null | tail -n 1; }

# pol_mon_start FILE / pol_mon_stop: a background monitor appending one JSON line per second.
pol_mon_start() {
  /bin/scx_sis monitor --json --interval "${2:-1}" >"$1" 2>/dev/null &
  POL_MON_PID=$!
  sleep 0.3
}
pol_mon_stop() {
  [ -n "$POL_MON_PID" ] || return 0
  kill -TERM "$POL_MON_PID" 2>/dev/null
  wait "$POL_MON_PID" 2>/dev/null
  POL_MON_PID=
}

# pol_tune ARGS: scx_sis tune ARGS; a failure is a failed check of its own.
pol_tune() {
  if ! /bin/scx_sis tune "$@" >/tmp/pol_tune.out 2>&1 && ! grep -q 'nothing to change' /tmp/pol_tune.out; then
    fail tune "scx_sis tune $*: $(tr '\n' ' ' </tmp/pol_tune.out | cut -c1-200)"
    return 1
  fi
}

# pol_median V...: the median (the lower middle one for an even count).
pol_median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# pol_perf OUT CMD...: CMD under perf stat; sets POL_MIG and POL_CS (its tasks' cpu-migrations and
# context switches). Returns CMD's exit status.
pol_perf() {
  _po=$1
  shift
  perf stat -x, -o "$_po" -e cpu-migrations,context-switches -- "$@" >/tmp/pol_cmd.out 2>&1
  _prc=$?
  POL_MIG=$(awk -F, '$3 ~ /cpu-migrations/ { print $1 + 0 }' "$_po")
  POL_CS=$(awk -F, '$3 ~ /context-switches/ { print $1 + 0 }' "$_po")
  return $_prc
}

# pol_probe PID CPU [PID2]: one consistent sample: "uptime_cs task_ticks cpu_idle_ticks run_ns
# wait_ns timeslices last_cpu pid2_ticks" (utime+stime and CPU's idle+iowait in USER_HZ ticks,
# PID's schedstat).
pol_probe() {
  awk -v pid="$1" -v c="cpu$2" -v pid2="${3:-$1}" '
    function ticks(p,   st, f) {
      st = ""; getline st <("/proc/" p "/stat"); close("/proc/" p "/stat")
      sub(/^.*\) /, "", st); split(st, f, " "); T_CPU = f[37]; return f[12] + f[13]
    }
    BEGIN {
    getline u <"/proc/uptime"; split(u, a, " "); split(a[1], b, ".")
    up = b[1] * 100 + substr(b[2] "00", 1, 2)
    t2 = ticks(pid2); t1 = ticks(pid); last = T_CPU
    while ((getline l <"/proc/stat") > 0) { split(l, g, " "); if (g[1] == c) idle = g[5] + g[6] }
    getline ss <("/proc/" pid "/schedstat"); split(ss, h, " ")
    printf "%d %d %d %.0f %.0f %d %d %d\n", up, t1, idle, h[1], h[2], h[3], last, t2 }'
}

# pol_kill PID...: SIGKILL and reap children of this shell.
pol_kill() {
  for _p in "$@"; do kill -KILL "$_p" 2>/dev/null; done
  for _p in "$@"; do wait "$_p" 2>/dev/null; done
}

# pol_ratio A B: A/B with 3 decimals (-1 when B is 0).
pol_ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print -1 }'; }

# pol_le A B: true if A <= B (numbers with decimals).
pol_le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }

# pol_paths JSON: "prev_idle=.. prev_almost_idle=.. ..." summed over LLCs.
pol_paths() {
  for _n in sync prev_idle prev_almost_idle idle_core llc_scan cross_llc fallback; do
    printf '%s=%s ' "$_n" "$(pol_jsum "$1" $_n)"
  done
}

# pol_scan_line JSON: what llc_scan did in one report: runs, skips, mean depth limit, CPUs tested,
# hit rate.
pol_scan_line() {
  _r=$(pol_jsum "$1" scan_runs)
  _d=$(pol_jsum "$1" scan_depth)
  _v=$(pol_jsum "$1" scan_visited)
  _f=$(pol_jsum "$1" scan_found)
  echo "scan_runs=$_r scan_skipped=$(pol_jsum "$1" scan_skipped) depth_avg=$(pol_ratio "$_d" "$_r") visited=$_v found=$_f hit=$(pol_ratio "$_f" "$_r")"
}

# pol_top SECS [N]: the N (12) tasks that used most CPU over SECS: ticks pid (comm) state cpuN.
pol_topsnap() {
  for _f in /proc/[0-9]*/stat; do read -r _l 2>/dev/null <"$_f" && echo "$_l"; done |
    awk '{ c = $2; n = 2; while (c !~ /\)$/) { n++; c = c "_" $n } print $1, c, $(n + 1), $(n + 37), $(n + 12) + $(n + 13) }'
}
pol_top() {
  pol_topsnap >/tmp/pol_top0
  sleep "$1"
  pol_topsnap >/tmp/pol_top1
  awk 'NR == FNR { t[$1] = $5; next } { d = $5 - ($1 in t ? t[$1] : 0); if (d > 0) print d, $1, $2, $3, "cpu" $4 }' \
    /tmp/pol_top0 /tmp/pol_top1 | sort -rn | head -n "${2:-12}"
}

pol_want() { case " $POL_CHECKS " in *" $1 "*) return 0 ;; esac; return 1; }

# --------------------------------------------------------------------------- 1. prev-bias

check_prev_bias() {
  _wl=${SIS_POL_PB_WORKLOAD:-/bin/scx_sis_lab wakelat --message-threads 1 --workers 4 --cputime-us 20 --sleep-us 200 --runtime 2 --warmup 0.3 --json}
  _reps=${SIS_POL_REPS:-5}
  _max=${SIS_POL_PB_RATIO:-0.75}
  if [ -n "${SIS_POL_PB_THRESHOLD:-}" ]; then
    pol_tune --prev-bias-threshold "$SIS_POL_PB_THRESHOLD" || return
  fi
  _thr=$(/bin/scx_sis tune --show 2>/dev/null | grep -i 'threshold' | tr -s ' ' | tr '\n' ' ')
  info "prev_bias: workload '$_wl', $_reps runs per setting, alternating; $_thr"
  _r_on='' _r_off='' _m_on='' _m_off='' _c_on='' _c_off='' _bad=''
  _pai_on=0 _pai_off=0 _st_on=0 _st_off=0
  _i=0
  while [ $_i -lt "$_reps" ]; do
    _i=$((_i + 1))
    if [ $((_i % 2)) = 1 ]; then _order="on off"; else _order="off on"; fi
    for _pb in $_order; do
      pol_tune --prev-bias "$_pb" || return
      pol_mon_start /tmp/pol_pb.json 1
      _t0=$(now_cs)
      # shellcheck disable=SC2086  # the workload is a command line
      pol_perf /tmp/pol_perf.csv $_wl
      _rc=$?
      _t1=$(now_cs)
      pol_mon_stop
      if [ $_rc -ne 0 ] || [ -z "$POL_MIG" ] || [ -z "$POL_CS" ]; then
        _bad="$_bad run$_i/$_pb:rc=$_rc,mig=$POL_MIG,cs=$POL_CS"
        continue
      fi
      _r=$(pol_ratio "$POL_MIG" "$POL_CS")
      _pai=$(json_sum prev_almost_idle </tmp/pol_pb.json)
      _st=$(($(json_sum dispatch_llc_steal </tmp/pol_pb.json) + $(json_sum dispatch_remote_steal </tmp/pol_pb.json)))
      info "prev_bias run $_i $_pb: cpu-migrations=$POL_MIG context-switches=$POL_CS per-cs=$_r wall=$(fmt_cs $((_t1 - _t0)))s | prev_almost_idle=$_pai wakeups=$(json_sum wakeups </tmp/pol_pb.json) steals=$_st | $(tail -n 1 /tmp/pol_cmd.out | cut -c1-90)"
      if [ "$_pb" = on ]; then
        _r_on="$_r_on $_r" _m_on="$_m_on $POL_MIG" _c_on="$_c_on $POL_CS"
        _pai_on=$((_pai_on + _pai)) _st_on=$((_st_on + _st))
      else
        _r_off="$_r_off $_r" _m_off="$_m_off $POL_MIG" _c_off="$_c_off $POL_CS"
        _pai_off=$((_pai_off + _pai)) _st_off=$((_st_off + _st))
      fi
    done
  done
  pol_tune --prev-bias on
  if [ -n "$_bad" ] || [ -z "$_r_on" ] || [ -z "$_r_off" ]; then
    fail prev_bias_migrations "workload failed:$_bad ($(tail -n 2 /tmp/pol_cmd.out | tr '\n' ' ' | cut -c1-200))"
    return
  fi
  # shellcheck disable=SC2086
  {
    _mr_on=$(pol_median $_r_on) _mr_off=$(pol_median $_r_off)
    _mm_on=$(pol_median $_m_on) _mm_off=$(pol_median $_m_off)
    _mc_on=$(pol_median $_c_on) _mc_off=$(pol_median $_c_off)
  }
  _rel=$(pol_ratio "$_mr_on" "$_mr_off")
  _detail="median cpu-migrations on=$_mm_on off=$_mm_off, context-switches on=$_mc_on off=$_mc_off, migrations per cs on=$_mr_on off=$_mr_off (on/off=$_rel, bound $_max) | per run on=[${_r_on# }] off=[${_r_off# }] | prev_almost_idle on=$_pai_on off=$_pai_off, steals on=$_st_on off=$_st_off"
  if [ "$_mm_off" -lt 10 ]; then
    fail prev_bias_migrations "too few migrations with prev-bias off to show a cut: $_detail"
  elif [ "$_pai_on" -eq 0 ] || [ "$_pai_off" -ne 0 ]; then
    fail prev_bias_migrations "prev_almost_idle must decide some wakeups with prev-bias on and none with it off: $_detail"
  elif pol_le "$_rel" "$_max" && [ "$_rel" != -1 ]; then
    pass prev_bias_migrations "$_detail"
  else
    fail prev_bias_migrations "$_detail"
  fi
}

# --------------------------------------------------------------------------- 2. SIS_UTIL curves

# pol_curve_report LABEL JSON: one SIS-INFO line per LLC.
pol_curve_report() {
  for _l in $(pol_llcs "$2"); do
    info "$1 llc$_l: cpus=$(pol_field "$2" "$_l" cpus) util_pct=$(pol_field "$2" "$_l" util_pct) nr_scan=$(pol_field "$2" "$_l" nr_scan) wakeups=$(pol_field "$2" "$_l" wakeups) scan_runs=$(pol_field "$2" "$_l" scan_runs) scan_skipped=$(pol_field "$2" "$_l" scan_skipped) scan_depth=$(pol_field "$2" "$_l" scan_depth) scan_visited=$(pol_field "$2" "$_l" scan_visited) scan_found=$(pol_field "$2" "$_l" scan_found)"
  done
}

# pol_gauges JSON: "llcN:util=U,nr_scan=S,cpus=C ..." for the PASS/FAIL lines.
pol_gauges() {
  for _l in $(pol_llcs "$1"); do
    printf 'llc%s:cpus=%s,util=%.1f%%,nr_scan=%s ' "$_l" "$(pol_field "$1" "$_l" cpus)" \
      "$(pol_field "$1" "$_l" util_pct)" "$(pol_field "$1" "$_l" nr_scan)"
  done
}

# pol_check_curve NAME JSON WANT: WANT is "cpus" (nr_scan == LLC size) or "linear" (min(size, 4)).
# Every LLC must be above 85% busy and at that nr_scan; the scan must have run with that depth.
pol_check_curve() {
  _name=$1 _j=$2 _want=$3 _why=
  for _l in $(pol_llcs "$_j"); do
    _n=$(pol_field "$_j" "$_l" cpus)
    _s=$(pol_field "$_j" "$_l" nr_scan)
    _u=$(pol_field "$_j" "$_l" util_pct)
    case $_want in
      cpus) _e=$_n ;;
      linear) _e=$((_n < 4 ? _n : 4)) ;;
    esac
    pol_le 85 "$_u" || _why="$_why llc$_l util ${_u}% <= 85%;"
    [ "$_s" = "$_e" ] || _why="$_why llc$_l nr_scan $_s != $_e;"
    _lr=$(pol_field "$_j" "$_l" scan_runs)
    _ld=$(pol_field "$_j" "$_l" scan_depth)
    [ "$_ld" = $((_lr * _e)) ] || _why="$_why llc$_l depth $_ld != runs $_lr x $_e;"
  done
  _runs=$(pol_jsum "$_j" scan_runs)
  _vis=$(pol_jsum "$_j" scan_visited)
  [ "$_runs" -gt 0 ] && [ "$_vis" -ge "$_runs" ] || _why="$_why scan ran $_runs times visiting $_vis CPUs (expected > 0);"
  [ "$(pol_jsum "$_j" scan_skipped)" = 0 ] || _why="$_why scan skipped $(pol_jsum "$_j" scan_skipped) times;"
  _d="$(pol_gauges "$_j")| $(pol_scan_line "$_j") | $(pol_paths "$_j")"
  if [ -z "$_why" ]; then pass "$_name" "$_d"; else fail "$_name" "${_why# } | $_d"; fi
}

check_curves() {
  pol_tune --sis-util quadratic || return
  sleep 0.5
  _j=$(pol_snap 1)
  pol_curve_report "sis_util idle" "$_j"
  _why=
  for _l in $(pol_llcs "$_j"); do
    [ "$(pol_field "$_j" "$_l" nr_scan)" = "$(pol_field "$_j" "$_l" cpus)" ] ||
      _why="$_why llc$_l nr_scan $(pol_field "$_j" "$_l" nr_scan) != cpus $(pol_field "$_j" "$_l" cpus);"
  done
  [ -n "$(pol_llcs "$_j")" ] || _why="no monitor report: '$(echo "$_j" | cut -c1-100)'"
  if [ -z "$_why" ]; then
    pass sis_util_idle "quadratic, nothing running: $(pol_gauges "$_j")"
  else
    fail sis_util_idle "${_why# } | $(pol_gauges "$_j")"
  fi

  # CPU hogs on every CPU at nice 19 (utilization counts time, not weight; the tools stay quick),
  # plus a task that wakes every 10 ms without forking, so wakeups reach llc_scan.
  nice -n 19 stress-ng --cpu "$POL_NCPU" --timeout 600s >/tmp/pol_stress.out 2>&1 &
  _spid=$!
  sh -c "exec 3<>$POL_FIFO; while :; do read -t 0.01 x <&3; done" &
  _lpid=$!
  POL_BG="$_spid $_lpid"
  _k=0
  while :; do
    _j=$(pol_snap 1)
    _k=$((_k + 1))
    _busy=1
    for _l in $(pol_llcs "$_j"); do pol_le 90 "$(pol_field "$_j" "$_l" util_pct)" || _busy=0; done
    [ $_busy = 1 ] && break
    [ $_k -ge 8 ] && break
  done
  info "sis_util: stress-ng --cpu $POL_NCPU up after $_k report(s): $(pol_gauges "$_j")"

  _j=$(pol_snap 2)
  pol_curve_report "sis_util quadratic+hogs" "$_j"
  _why=
  for _l in $(pol_llcs "$_j"); do
    pol_le 85 "$(pol_field "$_j" "$_l" util_pct)" || _why="$_why llc$_l util $(pol_field "$_j" "$_l" util_pct)% <= 85%;"
    [ "$(pol_field "$_j" "$_l" nr_scan)" = 0 ] || _why="$_why llc$_l nr_scan $(pol_field "$_j" "$_l" nr_scan) != 0;"
  done
  [ "$(pol_jsum "$_j" scan_runs)" = 0 ] || _why="$_why scan_runs $(pol_jsum "$_j" scan_runs) != 0;"
  [ "$(pol_jsum "$_j" scan_visited)" = 0 ] || _why="$_why scan_visited $(pol_jsum "$_j" scan_visited) != 0;"
  [ "$(pol_jsum "$_j" scan_skipped)" -gt 0 ] || _why="$_why no wakeup reached llc_scan (scan_skipped 0);"
  _d="$(pol_gauges "$_j")| $(pol_scan_line "$_j") | $(pol_paths "$_j")"
  if [ -z "$_why" ]; then pass sis_util_busy_quadratic "$_d"; else fail sis_util_busy_quadratic "${_why# } | $_d"; fi

  pol_tune --sis-util linear && sleep 0.5
  _j=$(pol_snap 2)
  pol_curve_report "sis_util linear+hogs" "$_j"
  pol_check_curve sis_util_busy_linear "$_j" linear

  pol_tune --sis-util off && sleep 0.5
  _j=$(pol_snap 2)
  pol_curve_report "sis_util off+hogs" "$_j"
  pol_check_curve sis_util_busy_off "$_j" cpus

  pol_tune --sis-util quadratic
  # shellcheck disable=SC2086  # a list of PIDs
  pol_kill $POL_BG
  POL_BG=
  grep -q 'successful run\|dispatching hogs' /tmp/pol_stress.out ||
    info "stress-ng: $(tail -n 3 /tmp/pol_stress.out | tr '\n' ' ')"
}

# --------------------------------------------------------------------------- 3. affinity corner case

check_affinity() {
  _cl=$(cat /sys/devices/system/cpu/cpu0/cache/index3/shared_cpu_list 2>/dev/null)
  if [ "$_cl" != "0-$POL_LAST" ] || [ "$POL_NCPU" -lt 7 ]; then
    info "affinity: skipped, needs one LLC of >= 7 CPUs (cpu0's LLC: '$_cl', $POL_NCPU CPUs; use --topo 1llc)"
    return
  fi
  _hk=0 _start=2 _idle=$POL_LAST _all=0-$POL_LAST
  # Housekeeping on CPU $_hk: the daemon, this shell and the tools it starts (see the top).
  taskset -a -pc $_hk "$SCHED_PID" >/dev/null
  taskset -pc $_hk $$ >/dev/null
  _hogs='' _shog=''
  _c=1
  while [ $_c -lt $_idle ]; do
    taskset -c $_c sh -c 'while :; do :; done' &
    _hogs="$_hogs $!"
    [ $_c = $_start ] && _shog=$!
    _c=$((_c + 1))
  done
  POL_BG=$_hogs
  sleep 1.5
  [ "${SIS_POL_DEBUG:-0}" = 1 ] && pol_top 3 | sed 's/^/SIS-INFO top: /'
  info "affinity: busy loops bound to CPUs 1-$((_idle - 1)), the daemon and this shell on CPU $_hk, CPU $_idle idle; unbound tasks start on CPU $_start"

  for _curve in off linear quadratic; do
    pol_tune --sis-util $_curve || continue
    sleep 0.3

    # (a) a task waking every 10 ms for a little work (no fork), started on hog CPU $_start.
    taskset -c $_start sh -c "exec 3<>$POL_FIFO; while :; do i=0; while [ \$i -lt 5 ]; do i=\$((i + 1)); done; read -t 0.01 x <&3; done" &
    _wp=$!
    sleep 0.2
    taskset -pc $_all $_wp >/dev/null
    # shellcheck disable=SC2046
    set -- $(pol_probe $_wp $_idle "$_shog")
    _t0=$1 _i0=$3 _r0=$4 _w0=$5 _n0=$6 _h0=$8
    _j=$(pol_snap 2)
    # shellcheck disable=SC2046
    set -- $(pol_probe $_wp $_idle "$_shog")
    _t1=$1 _i1=$3 _r1=$4 _w1=$5 _n1=$6 _wcpu=$7 _h1=$8
    pol_kill $_wp
    _win=$((_t1 - _t0))
    _wrun=$(((_r1 - _r0) / 10000000)) _wwait=$(((_w1 - _w0) / 10000000))
    _u=$(pol_field "$_j" 0 util_pct) _s=$(pol_field "$_j" 0 nr_scan)
    info "affinity $_curve waking task: util_pct=$_u nr_scan=$_s | $(pol_scan_line "$_j") | $(pol_paths "$_j")| migrations=$(pol_jsum "$_j" migrations) steals=$(pol_jsum "$_j" dispatch_llc_steal) tick_kicks=$(pol_jsum "$_j" tick_kicks)"
    _d="window=$(fmt_cs $_win)s waking task ran $(fmt_cs $_wrun)s, waited $(fmt_cs $_wwait)s over $((_n1 - _n0)) runs, last on CPU $_wcpu; CPU $_idle idle $(fmt_cs $((_i1 - _i0)))s; CPU $_start's bound loop ran $(fmt_cs $((_h1 - _h0)))s"
    # It sleeps most of the time: queued behind a hog (a busy prev, no scan reaching CPU $_idle,
    # nobody stealing it) it would wait a large part of the window. A light task that runs next
    # to a hog without waiting passes; the line above shows where it went.
    if [ "$_win" -gt 0 ] && [ $((_wwait * 5)) -le "$_win" ] && [ $((_n1 - _n0)) -gt 0 ]; then
      pass "affinity_wake_$_curve" "$_d"
    else
      fail "affinity_wake_$_curve" "waited more than 20% of the window: $_d"
    fi

    # (b) a CPU-bound loop started on hog CPU $_start, then unbound: it must end up on CPU $_idle.
    taskset -c $_start sh -c 'while :; do :; done' &
    _bp=$!
    sleep 0.2
    taskset -pc $_all $_bp >/dev/null
    sleep 0.5
    # shellcheck disable=SC2046
    set -- $(pol_probe $_bp $_idle "$_shog")
    _t0=$1 _k0=$2 _i0=$3 _h0=$8
    if [ "${SIS_POL_DEBUG:-0}" = 1 ]; then pol_top 2 8 | sed 's/^/SIS-INFO top: /'; else sleep 2; fi
    # shellcheck disable=SC2046
    set -- $(pol_probe $_bp $_idle "$_shog")
    _t1=$1 _k1=$2 _i1=$3 _bcpu=$7 _h1=$8
    pol_kill $_bp
    _win=$((_t1 - _t0)) _bk=$((_k1 - _k0)) _bi=$((_i1 - _i0)) _bh=$((_h1 - _h0))
    _d="window=$(fmt_cs $_win)s unbound busy loop ran $(fmt_cs $_bk)s, last on CPU $_bcpu; CPU $_start's bound loop ran $(fmt_cs $_bh)s; CPU $_idle idle $(fmt_cs $_bi)s"
    # Work conservation: with CPU $_idle free, neither loop may wait. Sharing a CPU gives each at
    # most half the window; on CPU $_idle the unbound loop shares only with the kernel's unbound
    # kworkers (which have no other CPU left either): both must get >= 65%. CPU $_idle's
    # /proc/stat idle time is only shown (on 6.12 it can lag a whole idle period).
    if [ "$_win" -gt 0 ] && [ $((_bk * 100)) -ge $((_win * 65)) ] && [ $((_bh * 100)) -ge $((_win * 65)) ]; then
      pass "affinity_busy_$_curve" "$_d"
    else
      fail "affinity_busy_$_curve" "both loops must get >= 65% of the window while CPU $_idle is free: $_d"
    fi
  done

  pol_tune --sis-util quadratic
  # shellcheck disable=SC2086  # a list of PIDs
  pol_kill $POL_BG
  POL_BG=
  taskset -a -pc $_all "$SCHED_PID" >/dev/null
  taskset -pc $_all $$ >/dev/null
}

# --------------------------------------------------------------------------- main

info "uname -r: $(uname -r), topology ${SIS_TOPO:-?}, checks: $POL_CHECKS"
if [ ! -f "$SCX_DIR/state" ] || [ ! -x /bin/scx_sis ]; then
  fail sched_ext_available "$SCX_DIR/state or /bin/scx_sis missing"
  finish
fi
mkfifo "$POL_FIFO" 2>/dev/null
dmesg_lines0=$(dmesg | wc -l)
t_start=$(now_cs)
# shellcheck disable=SC2086
if ! start_sched ${SIS_SCHED_ARGS:-}; then
  fail sched_enabled "$SCHED_START_ERR; last log line: $(tail -n 1 "$SCHED_LOG" | cut -c1-200)"
  finish
fi
info "scx_sis enabled after $(fmt_cs "$SCHED_START_CS")s: $(/bin/scx_sis tune --show 2>/dev/null | tr -s ' ' | tr '\n' ';' | cut -c1-300)"
sleep 2

for c in curves prevbias affinity; do
  pol_want $c || continue
  t0=$(now_cs)
  case $c in
    curves) check_curves ;;
    prevbias) check_prev_bias ;;
    affinity) check_affinity ;;
  esac
  pol_mon_stop
  # shellcheck disable=SC2086  # a list of PIDs
  [ -n "$POL_BG" ] && pol_kill $POL_BG && POL_BG=
  info "$c took $(fmt_cs $(($(now_cs) - t0)))s"
done

state=$(scx_state)
errs=$(scx_dmesg_errors $((dmesg_lines0 + 1)))
if [ "$state" = enabled ] && sched_alive && [ -z "$errs" ]; then
  pass policy_sched_survived "state=enabled, scx_sis alive, dmesg clean after $(fmt_cs $(($(now_cs) - t_start)))s"
else
  fail policy_sched_survived "state=$state alive=$(sched_alive && echo yes || echo no) dmesg: $(echo "$errs" | head -n 3 | tr '\n' '|')"
fi
stop_sched 20 || fail policy_unload "scx_sis exited rc=$?"
finish
