#!/bin/sh
# Safe as root: trace -o writes a FIFO, a character device, /dev/null and stdout in place and
# refuses a directory and /proc; a stale temp file of a killed trace is removed; with the daemon
# stopped (SIGSTOP), monitor and trace end within their request timeout naming it, and Ctrl-C
# ends a monitor waiting on it. tests/vm/safety.rs judges the records: kv out_<case> (what a
# target was before and after, the rc) and kv stopped_<case> (rc, centiseconds, whether the
# daemon's pid was named).
. /sis/lib.sh

guest_open
guest_start --stats-interval 60

# ftype PATH: what PATH is (not following a symlink).
ftype() {
  if [ -L "$1" ]; then echo symlink
  elif [ -c "$1" ]; then echo chardev
  elif [ -p "$1" ]; then echo fifo
  elif [ -d "$1" ]; then echo dir
  elif [ -f "$1" ]; then echo file
  elif [ -e "$1" ]; then echo other
  else echo none
  fi
}

# out_case NAME TARGET [READER-OUT]: trace -o TARGET; the record holds TARGET's type before and
# after, the rc and the bytes a reader of it got.
out_case() {
  _before=$(ftype "$2")
  CAP_OUT=/tmp/out.stdout CAP_ERR=/tmp/out.err run_capped 60 /bin/scx_sis trace --duration 1 -o "$2"
  _rc=$?
  _bytes=0
  [ -n "${3:-}" ] && [ -f "$3" ] && _bytes=$(wc -c <"$3")
  rec kv "out_$1" "before=$_before after=$(ftype "$2") rc=$_rc bytes=$_bytes stdout=$(wc -c </tmp/out.stdout) err=[$(tail -n 1 /tmp/out.err | tr -d '[]' | cut -c1-160)]"
}

out_case devnull /dev/null
mknod /tmp/null c 1 3
out_case mknod /tmp/null
mkfifo /tmp/fifo
cat /tmp/fifo >/tmp/fifo.out &
_cat=$!
out_case fifo /tmp/fifo
wait "$_cat"
rec kv out_fifo_read "bytes=$(wc -c </tmp/fifo.out) json=$(head -c 14 /tmp/fifo.out | grep -c traceEvents)"
out_case stdout /dev/stdout
mkdir -p /tmp/adir
out_case dir /tmp/adir
out_case proc /proc/self/status
# A killed trace's leftover, then a run with the same target.
: >/tmp/.t.json.Ab12Cd.tmp
out_case stale /tmp/t.json
rec kv stale_left "n=$(find /tmp -maxdepth 1 -name '.t.json.*.tmp' | wc -l)"

# The daemon stopped: monitor and trace end within the request timeout (5 s, more under TCG).
DPID=$SCHED_PID
kill -STOP "$DPID"
# stopped_case NAME CMD...: CMD with the daemon stopped.
stopped_case() {
  _n=$1
  shift
  _t0=$(now_cs)
  CAP_OUT=/tmp/st.out CAP_ERR=/tmp/st.err run_capped 60 "$@"
  _rc=$?
  _named=$(grep -c "(pid $DPID) did not answer" /tmp/st.err)
  rec kv "stopped_$_n" "rc=$_rc cs=$(($(now_cs) - _t0)) named=$_named err=[$(tail -n 1 /tmp/st.err | tr -d '[]' | cut -c1-200)]"
}
stopped_case monitor /bin/scx_sis monitor --json --count 1
stopped_case trace /bin/scx_sis trace --duration 2 -o /tmp/stopped.json
rec kv stopped_trace_file "exists=$([ -e /tmp/stopped.json ] && echo 1 || echo 0)"
kill -CONT "$DPID"

# Ctrl-C while monitor waits on a daemon stopped after its first answer.
/bin/scx_sis monitor --json --interval 1 >/tmp/mi.out 2>/tmp/mi.err &
_mon=$!
sleep 3
kill -STOP "$DPID"
sleep 2
_t0=$(now_cs)
kill -INT "$_mon"
sleep 1
kill -INT "$_mon" 2>/dev/null
rel_wait_exit "$_mon" 60
rec kv stopped_ctrlc "rc=$REL_RC cs=$(($(now_cs) - _t0)) named=1 err=[$(tail -n 1 /tmp/mi.err | tr -d '[]' | cut -c1-200)]"
kill -CONT "$DPID"
sleep 1
if /bin/scx_sis tune --show 2>/dev/null | grep -q '^trace  *off'; then
  pass trace_left_off "after the stopped daemon resumed: trace off"
else
  fail trace_left_off "$(/bin/scx_sis tune --show 2>&1 | grep '^trace')"
fi

guest_close

# The unit's file-system sandbox, as far as busybox builds one: a mount namespace where the
# system's directories, /sys and /proc/sys are read-only, /sys/fs/bpf and /run writable and /tmp
# private (ProtectSystem=strict, ReadWritePaths=/sys/fs/bpf /run, PrivateTmp). The daemon must
# load there, serve monitor and tune from outside, and reload after a CPU hotplug. (busybox has
# no setpriv --bounding-set: the capabilities are not narrowed here.)
mkdir -p /var/run/scx
cat >/tmp/sandbox.sh <<'EOS'
mount --make-rprivate /
for d in /bin /lib /lib64 /etc /boot /root /sis /guest /var; do
  [ -d "$d" ] && mount --bind "$d" "$d" && mount -o remount,bind,ro "$d"
done
# /var/run is /run on a distribution (a symlink): writable like it, for the stats socket.
mount --bind /var/run /var/run && mount -o remount,bind,rw /var/run
mount -o remount,bind,ro /sys
mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys
mount -t tmpfs tmpfs /tmp
exec /bin/scx_sis --stats-interval 60
EOS
: >"$SCHED_LOG"
unshare -m sh /tmp/sandbox.sh >"$SCHED_LOG" 2>&1 &
SCHED_PID=$!
if wait_state enabled 60; then
  sleep 1
  # Each mount the daemon sees, with its options (rw/ro), for the record.
  _mnt=$(awk '$5 ~ "^/(bin|etc|sys|sys/fs/bpf|proc/sys|tmp)$" { split($6, o, ","); printf "%s:%s ", $5, o[1] }' "/proc/$SCHED_PID/mountinfo")
  _bin_w=$(nsenter -t "$SCHED_PID" -m sh -c 'touch /bin/.w 2>/dev/null && echo yes || echo no')
  # The system calls it makes from here on, the reload's new load included: the unit's
  # SystemCallFilter= must allow each (the host's judge holds them against it).
  perf trace -s -o /tmp/ptrace.txt -p "$SCHED_PID" >/tmp/ptrace.err 2>&1 &
  _pt=$!
  sleep 3
  CAP_OUT=/tmp/sbmon.out CAP_ERR=/tmp/sbmon.err run_capped 60 /bin/scx_sis monitor --json --count 1
  _mrc=$?
  CAP_OUT=/tmp/sbtune.out CAP_ERR=/tmp/sbtune.err run_capped 60 /bin/scx_sis tune --prev-bias off
  _trc=$?
  _cpu=/sys/devices/system/cpu/cpu3/online
  echo 0 >"$_cpu"
  wait_log 'reloading with the live tunables' 60
  _rl=$?
  sleep 2
  echo 1 >"$_cpu"
  wait_state enabled 60
  sleep 2
  _alive=$(sched_alive && echo 1 || echo 0)
  kill -INT "$_pt" 2>/dev/null
  rel_wait_exit "$_pt" 30
  # perf trace -s: a table per thread, a syscall's name and its count on each row.
  _sys=$(awk '/-----/ { f = 1; next } f && $1 ~ /^[a-z_0-9]+$/ && $2 ~ /^[0-9]+$/ { print $1 }' /tmp/ptrace.txt 2>/dev/null | sort -u | tr '\n' ' ')
  rec kv sandbox_syscalls "perf_rc=$REL_RC syscalls=[${_sys% }] err=[$(tail -n 1 /tmp/ptrace.err | tr -d '[]' | cut -c1-120)]"
  stop_sched 30
  _src=$?
  rec kv sandbox "loaded=1 mounts=[${_mnt% }] bin_writable=$_bin_w monitor_rc=$_mrc monitor_lines=$(grep -c '^{' /tmp/sbmon.out) tune_rc=$_trc reloaded=$((1 - _rl)) alive_after_reload=$_alive unload_rc=$_src"
else
  rec kv sandbox "loaded=0 state=$(scx_state) log=[$(tail -n 2 "$SCHED_LOG" | tr -d '[]' | tr '\n' '|' | cut -c1-200)]"
  stop_sched 10
fi
finish
