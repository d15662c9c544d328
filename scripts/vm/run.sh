#!/usr/bin/env bash
# Boot a kernel under QEMU (TCG) with an initramfs built for it and run one guest script.
#
#   scripts/vm/run.sh --kernel VMLINUZ --config KCONFIG --guest GUEST_SCRIPT
#       [--bin SCX_SIS_BINARY]   installed as /bin/scx_sis (optional: a guest script may not need it)
#       [--topo 2llc-smt|2llc|2numa|1llc|1llc-smt|smp4|2cpu|1llc-N]   default 2llc-smt (1llc-N: N CPUs, one LLC)
#       [--accel single|multi]   TCG threads: single (default) runs every vCPU on one host thread in
#                                turn; multi gives each vCPU its own host thread (2cpu on a 2-core
#                                host: a guest's times are not the other vCPUs' turns)
#       [--timeout SECS]         default 600; the qemu process is killed after that (exit 124)
#       [--mem 2G] [--log FILE] [--quiet]
#       [--append-env "K=V K2=V2"]  env for the guest script (split on spaces)
#       [--env K=V]              one variable, value may contain spaces (repeatable)
#       [--extra HOST_BINARY]    extra binary (+ its libraries) at /bin/<name> (repeatable)
#       [--append "KERNEL ARGS"] extra kernel command line
#
# The console is streamed to stdout (unless --quiet) and to --log FILE if given.
# Exit status: the guest script's, from its "SIS-GUEST-EXIT <rc>" line; 124 on timeout;
# 125 when the guest never printed that line (kernel panic, init failure, ...).
# The guest sees SIS_TOPO (topology name) and SIS_ACCEL in its environment; /sis/lib.sh is the
# guest library (scripts/guest/lib.sh), /guest/ holds GUEST_SCRIPT and the helpers it sources
# (mkinitramfs.sh says which), and nothing else of the source tree is in the image.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

kernel='' config='' bin='' guest='' topo=2llc-smt accel=single timeout=600 mem=2G log='' quiet=0 append=''
envs=() extras=()
usage() { sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while (($#)); do
  case $1 in
    --kernel) kernel=$2; shift 2 ;;
    --config) config=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --guest) guest=$2; shift 2 ;;
    --topo) topo=$2; shift 2 ;;
    --accel) accel=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --mem) mem=$2; shift 2 ;;
    --log) log=$2; shift 2 ;;
    --quiet) quiet=1; shift ;;
    --append-env) read -r -a kv <<<"$2"; envs+=("${kv[@]}"); shift 2 ;;
    --env) envs+=("$2"); shift 2 ;;
    --extra) extras+=(--extra "$2"); shift 2 ;;
    --append) append=$2; shift 2 ;;
    -h|--help) usage ;;
    *) echo "run.sh: unknown argument $1" >&2; usage ;;
  esac
done
[[ -n $kernel && -n $config && -n $guest ]] || usage
for f in "$kernel" "$config" "$guest" ${bin:+"$bin"}; do
  [[ -f $f ]] || { echo "run.sh: $f not found" >&2; exit 2; }
done

# Guest CPU topology. qemu64's default vendor is AMD, where QEMU 7.2 folds SMT and dies into one
# LLC; with vendor=GenuineIntel the L3 (CPUID leaf 4) is shared per die.
memnum=${mem%[GgMm]}
# shellcheck disable=SC2054  # commas belong to the qemu option values
case $topo in
  2llc-smt) topo_args=(-cpu qemu64,vendor=GenuineIntel -smp 8,sockets=1,dies=2,cores=2,threads=2) ;;
  2llc)     topo_args=(-cpu qemu64,vendor=GenuineIntel -smp 8,sockets=2,cores=4,threads=1) ;;
  2numa)
    case $mem in *[Gg]) half=$((memnum * 512))M ;; *) half=$((memnum / 2))M ;; esac
    topo_args=(-cpu qemu64,vendor=GenuineIntel -smp 8,sockets=2,cores=4,threads=1
      -object "memory-backend-ram,id=m0,size=$half" -object "memory-backend-ram,id=m1,size=$half"
      -numa node,memdev=m0,cpus=0-3,nodeid=0 -numa node,memdev=m1,cpus=4-7,nodeid=1) ;;
  1llc)     topo_args=(-cpu qemu64,vendor=GenuineIntel -smp 8,sockets=1,cores=8,threads=1) ;;
  1llc-smt) topo_args=(-cpu qemu64,vendor=GenuineIntel -smp 8,sockets=1,cores=4,threads=2) ;;
  smp4)     topo_args=(-cpu qemu64,vendor=GenuineIntel -smp 4,sockets=1,cores=4,threads=1) ;;
  2cpu)     topo_args=(-cpu qemu64,vendor=GenuineIntel -smp 2,sockets=1,cores=2,threads=1) ;;
  1llc-[0-9]*)
    n=${topo#1llc-}
    if ! [[ $n =~ ^[0-9]+$ ]] || ((n < 1 || n > 64)); then
      echo "run.sh: bad --topo $topo (1llc-N, N in 1..64)" >&2; exit 2
    fi
    topo_args=(-cpu qemu64,vendor=GenuineIntel -smp "$n,sockets=1,cores=$n,threads=1") ;;
  *) echo "run.sh: unknown --topo $topo" >&2; exit 2 ;;
esac
case $accel in
  single|multi) ;;
  *) echo "run.sh: unknown --accel $accel (single or multi)" >&2; exit 2 ;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/sis-vm.XXXXXX")
qpid='' tpid=''
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  [[ -n $qpid ]] && kill -KILL "$qpid" 2>/dev/null
  [[ -n $tpid ]] && kill "$tpid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
trap 'echo "run.sh: interrupted" >&2; exit 130' INT TERM

release=$("$HERE/kver.sh" "$kernel")

# Environment for the guest script: one single-quoted export per variable.
{
  echo "export SIS_TOPO='$topo'"
  echo "export SIS_ACCEL='$accel'"
  echo "export SIS_KERNEL_RELEASE='$release'"
  for kv in "${envs[@]}"; do
    [[ $kv == *=* && ${kv%%=*} =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || { echo "run.sh: bad env '$kv'" >&2; exit 2; }
    v=${kv#*=}
    printf "export %s='%s'\n" "${kv%%=*}" "${v//\'/\'\\\'\'}"
  done
} >"$work/sis.env"

t0=$(date +%s%N)
"$HERE/mkinitramfs.sh" --out "$work/initrd.gz" --config "$config" --release "$release" \
  ${bin:+--bin "$bin"} --guest "$guest" --env-file "$work/sis.env" "${extras[@]}"
t1=$(date +%s%N)
echo "run.sh: kernel $release, topo $topo, accel $accel, initramfs $(du -k "$work/initrd.gz" | cut -f1) KiB in $(((t1 - t0) / 1000000)) ms" >&2

console=${log:-$work/console.log}
: >"$console"
# --accel single is the default: one host thread runs the vCPUs in turn. With multi (a host
# thread per vCPU) a guest can oops where the kernel patches its own text while another vCPU
# runs it: an int3 left mid-patch at __schedule's sched_switch tracepoint call, once in 49
# enables and unloads of scx_sis under hackbench on 2cpu (7.3.4; none in 22 on 6.12.117, none
# in 25 on 7.3.4 with single). So a run with multi should enable and unload the scheduler rarely;
# the VM tests boot a run that died so once more (tests/vm/harness.rs, emulator_oops).
# oops=panic: a guest that oopses ends at once (panic=-1 with -no-reboot ends QEMU, exit 125)
# instead of hanging until the timeout; the oops is on the console either way.
# watchdog_thresh=60: the soft-lockup detector reports a CPU that has not scheduled for twice
# this many seconds, and on 7.x a soft lockup ejects any sched_ext scheduler. Under TCG a vCPU
# spinning for another's IPI ack (a TLB flush) can wait past the default 20 s while the one host
# thread serves the other vCPUs; a real lockup never ends, so 120 s still catches it.
qemu-system-x86_64 -m "$mem" -accel "tcg,thread=$accel" -nographic -no-reboot \
  "${topo_args[@]}" \
  -kernel "$kernel" -initrd "$work/initrd.gz" \
  -append "console=ttyS0 panic=-1 oops=panic quiet sched_verbose watchdog_thresh=60 sis.guest=/guest/$(basename "$guest") $append" \
  </dev/null >"$console" 2>&1 &
qpid=$!
if ((!quiet)); then
  tail -n +1 -f --pid="$qpid" "$console" &
  tpid=$!
fi

rc=
start=$SECONDS
while kill -0 "$qpid" 2>/dev/null; do
  if ((SECONDS - start >= timeout)); then
    echo "run.sh: timeout after ${timeout}s, killing qemu (pid $qpid)" >&2
    kill -TERM "$qpid" 2>/dev/null || true
    sleep 2
    kill -KILL "$qpid" 2>/dev/null || true
    rc=124
    break
  fi
  sleep 1
done
wait "$qpid" 2>/dev/null || true
qpid=
if [[ -n $tpid ]]; then wait "$tpid" 2>/dev/null || true; tpid=; fi

if [[ -z $rc ]]; then
  line=$(tr -d '\r' <"$console" | grep -aoE 'SIS-GUEST-EXIT [0-9]+' | tail -n1 || true)
  if [[ -n $line ]]; then
    rc=${line#SIS-GUEST-EXIT }
  else
    echo "run.sh: guest did not report SIS-GUEST-EXIT (panic or init failure?)" >&2
    rc=125
  fi
fi
echo "run.sh: guest rc=$rc after $((SECONDS - start)) s" >&2
exit "$rc"
