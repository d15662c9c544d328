#!/usr/bin/env bash
# The whole test suite: style checks, unit tests, and the VM tests that load
# scx_sis on real sched_ext kernels (6.12 and the newest 7.x) under QEMU.
#   SCX_SIS_SKIP_VM=1 scripts/test.sh     unit tests and checks only
#   scripts/test.sh --long                  only the long runs: reliability and chaos, 10-minute loads (~45 min)
#   scripts/test.sh --matrix                only foundation, runtime_control and an RT hog beside
#                                           hackbench (fairness.sh's rt case) on every kernel series
#                                           with sched_ext (SCX_SIS_MATRIX to choose; ~10 min each)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

scripts/setup.sh
if [ "${1:-}" = "--long" ]; then
  echo "test: reliability and chaos with 10-minute loads (SCX_SIS_LONG=1)" >&2
  SCX_SIS_LONG=1 exec cargo test --release --test vm _long_ -- --test-threads=1
fi
if [ "${1:-}" = "--matrix" ]; then
  # Every series with a sched_ext build: our 6.12 and Debian's from 6.16 on (scripts/kernels.sh).
  export SCX_SIS_MATRIX=${SCX_SIS_MATRIX:-6.12 6.16 6.17 6.18 6.19 7.0 7.1 7.2 7.3}
  echo "test: foundation, runtime_control and the RT hog on $SCX_SIS_MATRIX" >&2
  exec cargo test --release --test vm matrix -- --exact --test-threads=1
fi
echo "test: style (cargo fmt, clang-format, clippy -D warnings)" >&2
cargo fmt --all --check
clang-format-19 --dry-run --Werror src/bpf/*.c src/bpf/*.h
cargo clippy --release --all-targets --quiet -- -D warnings
scripts/check-package.sh

echo "test: unit tests and VM tests (two VMs at a time; tests/vm/main.rs VM_SLOTS)" >&2
cargo test --release -- --test-threads=2
