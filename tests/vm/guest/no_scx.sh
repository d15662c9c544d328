#!/bin/sh
# A kernel without sched_ext (Debian's own 6.12 build): scx_sis must refuse with one line that
# says the kernel has no sched_ext and names CONFIG_SCHED_CLASS_EXT, exit non-zero and leave
# nothing behind. Not root is refused first, with its own line. `tune` and `monitor` say that no
# instance runs.
. /sis/lib.sh

rel=$(uname -r)
info "uname -r: $rel"
cfg=/boot/config-$rel
kconf=$(grep -E '^(# )?CONFIG_SCHED_CLASS_EXT[ =]' "$cfg" 2>/dev/null)
if [ ! -e "$SCX_DIR" ] && [ -n "$kconf" ] && [ "$kconf" != CONFIG_SCHED_CLASS_EXT=y ]; then
  pass no_sched_ext_kernel "$SCX_DIR missing; $cfg: '$kconf'"
else
  fail no_sched_ext_kernel "want a kernel without sched_ext: $SCX_DIR $([ -e "$SCX_DIR" ] && echo present || echo missing), $cfg: '${kconf:-no such line}'"
  finish
fi

# one NAME PATTERN...: the last run_capped had rc != 0 (not killed), nothing on stdout, exactly one
# stderr line, matching every PATTERN (fixed strings).
one() {
  _n=$1 _rc=$2
  shift 2
  _lines=$(wc -l </tmp/ns.err)
  _d="rc=$_rc stdout=$(wc -c </tmp/ns.out)B stderr_lines=$_lines: $(rel_oneline /tmp/ns.err)"
  _ok=1
  for _p in "$@"; do grep -qF -- "$_p" /tmp/ns.err || _ok=0; done
  if [ $_ok = 1 ] && [ "$_rc" -ne 0 ] && [ "$_rc" -ne 137 ] && [ ! -s /tmp/ns.out ] && [ "$_lines" -eq 1 ]; then
    pass "$_n" "$_d"
  else
    fail "$_n" "want one line with [$*]; $_d"
  fi
}
export CAP_OUT=/tmp/ns.out CAP_ERR=/tmp/ns.err

run_capped 60 /bin/scx_sis
one refused_no_sched_ext $? "no sched_ext" "CONFIG_SCHED_CLASS_EXT" "$rel"
run_capped 60 /bin/scx_sis --wakeq on --stats-interval 2
one refused_no_sched_ext_flags $? "no sched_ext" "CONFIG_SCHED_CLASS_EXT"
left=$(find /sys/fs/bpf /run -name '*scx_sis*' 2>/dev/null | tr '\n' ' ')
if [ -z "$left" ]; then
  pass nothing_left "no scx_sis pin, lock or socket under /sys/fs/bpf or /run"
else
  fail nothing_left "left behind: $left"
fi

# Not root: refused before anything else, so the line is about root, not sched_ext.
nobody_usable
uid=$(su -s /bin/sh nobody -c 'id -u' 2>&1)
run_capped 60 su -s /bin/sh nobody -c /bin/scx_sis
rc=$?
if [ "$uid" = 65534 ]; then
  one refused_not_root $rc "must run as root"
else
  fail refused_not_root "could not run as nobody: id -u said '$uid'"
fi

run_capped 60 /bin/scx_sis tune --show
one tune_no_instance $? "no scx_sis instance is running"
finish
