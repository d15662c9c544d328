#!/usr/bin/env bash
# Print the kernel release (what `uname -r` will say in the guest) of an x86 bzImage,
# read from the boot protocol header: u16 at 0x20e points (minus 0x200) to the version string.
set -euo pipefail
f=${1:?usage: kver.sh VMLINUZ}
magic=$(dd if="$f" bs=1 skip=$((0x202)) count=4 2>/dev/null)
if [[ "$magic" != "HdrS" ]]; then
  echo "kver.sh: $f is not an x86 bzImage" >&2
  exit 1
fi
ptr=$(od -An -t u2 -j $((0x20e)) -N 2 "$f" | tr -d ' ')
ver=$(dd if="$f" bs=1 skip=$((ptr + 0x200)) count=256 2>/dev/null | tr '\0' '\n' | head -n1 | cut -d' ' -f1)
[[ -n "$ver" ]] || { echo "kver.sh: no version string in $f" >&2; exit 1; }
echo "$ver"
