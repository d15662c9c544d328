#!/usr/bin/env bash
# The whole test suite: style checks, unit tests, and the VM tests that load
# scx_sis on real sched_ext kernels (6.12 and the newest 7.x) under QEMU.
#   SCX_SIS_SKIP_VM=1 scripts/test.sh     unit tests and checks only
#   scripts/test.sh --long                  only the long runs: reliability and chaos, 10-minute loads (~45 min)
#   scripts/test.sh --matrix                only foundation, runtime_control and an RT hog beside
#                                           hackbench (fairness.sh's rt case) on every kernel series
#                                           with sched_ext (SCX_SIS_MATRIX to choose; ~10 min each)
# Those runs are #[ignore]d tests (tests/vm/main.rs), so the default run leaves them out and
# these run them with --ignored.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

scripts/setup.sh
if [ "${1:-}" = "--long" ]; then
  echo "test: reliability and chaos with 10-minute loads" >&2
  exec cargo test --release --test vm _long_ -- --ignored --test-threads=1
fi
if [ "${1:-}" = "--matrix" ]; then
  echo "test: foundation, runtime_control and the RT hog on ${SCX_SIS_MATRIX:-every series with sched_ext (tests/vm/matrix.rs)}" >&2
  exec cargo test --release --test vm matrix -- --ignored --exact --test-threads=1
fi
echo "test: style (cargo fmt, clang-format, clippy -D warnings, each BPF header alone)" >&2
cargo fmt --all --check
clang-format-19 --dry-run --Werror src/bpf/*.c src/bpf/*.h
cargo clippy --release --all-targets --quiet -- -D warnings
# After clippy: the build it ran left the scx and libbpf headers the check compiles against.
scripts/check-bpf-headers.sh
scripts/check-package.sh

echo "test: unit tests and VM tests (two VMs at a time; tests/vm/main.rs VM_SLOTS)" >&2
cargo test --release -- --test-threads=2
