#!/usr/bin/env bash
# The README's trace picture, from a real trace of hackbench in the project's VM:
#   scripts/trace-demo.sh [SERIES]     (default 7; writes docs/trace-hackbench.svg and
#                                       docs/trace-hackbench.txt, the summary)
# Builds the release binaries first if they are missing.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
series=${1:-7}
[[ -x target/release/scx_sis && -x target/release/scx_sis_lab ]] || cargo build --release
read -r kernel config _ < <(scripts/kernels.sh fetch "$series" | tail -n 1)
log=$(mktemp /tmp/scx_sis-trace-demo.XXXXXX.log)
echo "trace-demo: tracing hackbench on $series (console in $log)" >&2
scripts/vm/run.sh --kernel "$kernel" --config "$config" --bin target/release/scx_sis \
  --extra target/release/scx_sis_lab --guest scripts/guest/trace_demo.sh --quiet --log "$log"
# The console ends lines with CR LF.
tr -d '\r' <"$log" | sed -n '/^SIS-DEMO-SVG-BEGIN$/,/^SIS-DEMO-SVG-END$/p' | sed '1d;$d' |
  base64 -d >docs/trace-hackbench.svg
tr -d '\r' <"$log" | sed -n '/^SIS-DEMO-SUMMARY-BEGIN$/,/^SIS-DEMO-SUMMARY-END$/p' | sed '1d;$d' \
  >docs/trace-hackbench.txt
echo "trace-demo: wrote docs/trace-hackbench.svg and docs/trace-hackbench.txt" >&2
