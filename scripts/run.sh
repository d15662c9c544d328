#!/usr/bin/env bash
# Build scx_sis and run it: natively where this kernel has sched_ext, otherwise
# in the project's VM (newest Debian 7.x kernel, 8 vCPUs in 2 LLCs) under a demo
# workload, streaming its per-LLC output. Arguments go to scx_sis.
#   scripts/run.sh [--vm] [scx_sis flags...]
#   SIS_DEMO_SECS=60 scripts/run.sh --vm --sis-util linear
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

vm=0
if [[ ${1:-} == --vm ]]; then
  vm=1
  shift
fi
[[ -d /sys/kernel/sched_ext ]] || vm=1

scripts/setup.sh
echo "run: building scx_sis (first build takes a few minutes)" >&2
cargo build --release --quiet

if ((vm == 0)); then
  exec target/release/scx_sis "$@"
fi

echo "run: this kernel ($(uname -r)) has no sched_ext: starting the VM demo instead" >&2
read -r vmlinuz config release < <(scripts/kernels.sh fetch 7)
echo "run: booting $release under QEMU (TCG, slow: about 100x); scx_sis ${*:-(defaults)}" >&2
exec scripts/vm/run.sh --kernel "$vmlinuz" --config "$config" --bin target/release/scx_sis \
  --guest scripts/guest/demo.sh --env "SIS_SCHED_ARGS=$*" \
  --env "SIS_DEMO_SECS=${SIS_DEMO_SECS:-25}" --timeout 600
