#!/usr/bin/env bash
# Each BPF header compiles on its own (clang -fsyntax-only): it includes what it uses, so the
# order of main.bpf.c's includes never matters. Needs a built tree: the scx and libbpf headers
# come from the build's output directories (cargo build first).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
TARGET=${CARGO_TARGET_DIR:-target}

newest() { find "$TARGET"/*/build -path "$1" -printf '%T@ %h\n' 2>/dev/null | sort -n | tail -n 1 | cut -d' ' -f2-; }
scx=$(newest '*/scx_sis-*/out/scx_utils-bpf_h/vmlinux.h')
libbpf=$(newest '*/libbpf-sys-*/out/include/bpf/bpf_helpers.h')
if [ -z "$scx" ] || [ -z "$libbpf" ]; then
  echo "check-bpf-headers: no built tree under $TARGET (run cargo build first)" >&2
  exit 1
fi
failed=0
for h in src/bpf/*.h; do
  if ! out=$(clang-19 -fsyntax-only -target bpf -D__TARGET_ARCH_x86 -I"$scx" -I"$scx/bpf-compat" \
    -I"$(dirname "$libbpf")" -Isrc/bpf -x c "$h" 2>&1); then
    echo "check-bpf-headers: $h does not compile on its own:" >&2
    echo "$out" | grep -m 5 'error' >&2
    failed=1
  fi
done
[ $failed -eq 0 ] && echo "check-bpf-headers: every header in src/bpf compiles on its own" >&2
exit $failed
