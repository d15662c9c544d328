#!/usr/bin/env bash
# scripts/test.sh [--quick | --long | --matrix | --help]: the whole test suite. This header is
# the one description of what it runs and of its options; the docs point here (--help prints it).
#
# Without an option it runs, in order, stopping at the first failure:
#   - scripts/setup.sh: the Debian packages and tools the rest needs (every mode runs it first)
#   - style: cargo fmt --all --check, clang-format on src/bpf/, cargo clippy -D warnings
#   - scripts/check-bpf-headers.sh: each BPF header compiles alone and uses what it includes
#   - scripts/check-package.sh: the .deb, its systemd unit and its documentation's links
#   - cargo test --release, twice: the VM tests, which load scx_sis on real sched_ext kernels
#     (6.12 and the newest 7.x) under QEMU, in two phases. First those that judge latencies,
#     each with the host alone (SCX_SIS_VM_PHASE=alone,
#     --test-threads=1); then the unit tests, tests/cli.rs, tests/architecture.rs and the other
#     VM tests, two VMs at a time (SCX_SIS_VM_PHASE=shared, --test-threads=2)
#
# Options (one, instead of the run above):
#   --quick    the run above with one VM smoke per default kernel series instead of every VM
#              test, for a change that does not touch the scheduler: the same setup, style
#              checks and cargo test with SCX_SIS_SKIP_VM=1 (the VM tests print skipped), then
#              cargo test of harness_6_12, harness_7 (boot, sched_ext, topology) and
#              runtime_control_6_12, runtime_control_7 (the real scheduler loaded, tuned,
#              killed), two VMs at a time. 6.5 minutes in a fresh clone on a 2-core host with
#              the prebuilt 6.12 kernel (the builds and checks, then ~1.5 min of VMs)
#   --long     only the long runs: reliability and chaos with 10-minute loads (~45 min)
#   --matrix   only foundation, runtime_control and an RT hog beside hackbench (fairness.sh's rt
#              case) on every kernel series with sched_ext (SCX_SIS_MATRIX to choose; ~10 min
#              each), ending in a table per kernel; 7.1 and 7.2 pass only with the refusal the
#              README's Compatibility table documents
#   --help     print this header and exit
# The runs of --long and --matrix are #[ignore]d tests (tests/vm/main.rs), so the default run
# leaves them out and these run them with --ignored.
#
# Each VM run prints a `vm-time:` line (its seconds: boot, initramfs build, script) and appends
# it to target/vm-times.txt, so a run leaves a table of where its time went.
#
# Environment: SCX_SIS_SKIP_VM=1 skips the VM tests (the checks and unit tests still run); the
# other variables the VM tests read (kernel series, timeouts, prebuilt kernels) are listed in
# tests/vm/main.rs.
set -euo pipefail

if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
  # The comment block above, up to the first line that is not a comment, without its "# ".
  sed -n '2,/^[^#]/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
  exit 0
fi

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
quick=0
if [ "${1:-}" = "--quick" ]; then
  quick=1
elif [ -n "${1:-}" ]; then
  echo "test.sh: unknown option $1 (--help lists them)" >&2
  exit 2
fi
echo "test: style (cargo fmt, clang-format, clippy -D warnings, each BPF header alone)" >&2
cargo fmt --all --check
clang-format-19 --dry-run --Werror src/bpf/*.c src/bpf/*.h
cargo clippy --release --all-targets --quiet -- -D warnings
# After clippy: the build it ran left the scx and libbpf headers the check compiles against.
scripts/check-bpf-headers.sh
scripts/check-package.sh

if ((quick)); then
  echo "test: unit tests, the VM tests skipped" >&2
  SCX_SIS_SKIP_VM=1 cargo test --release -- --test-threads=2
  echo "test: VM smoke, harness and runtime_control on 6.12 and 7 (two VMs at a time)" >&2
  exec cargo test --release --test vm -- --exact harness_6_12 harness_7 \
    runtime_control_6_12 runtime_control_7 --test-threads=2
fi
# Two phases: the VM tests that take the host alone, one after another, then the rest (and the
# unit tests) two at a time, so that no test thread idles while a run waits for the host alone.
echo "test: VM tests that take the host alone, one at a time (tests/vm/harness.rs in_phase)" >&2
SCX_SIS_VM_PHASE=alone cargo test --release --test vm -- --test-threads=1
echo "test: unit tests and the other VM tests, two VMs at a time" >&2
SCX_SIS_VM_PHASE=shared cargo test --release -- --test-threads=2
