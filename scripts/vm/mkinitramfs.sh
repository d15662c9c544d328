#!/usr/bin/env bash
# Build the VM's initramfs (cpio newc, gzip) for one guest script.
#   mkinitramfs.sh --out FILE --config KCONFIG --release REL --guest SCRIPT [--bin SCX_SIS]
#                  [--env-file FILE] [--extra HOST_BINARY]...
#   mkinitramfs.sh --guest SCRIPT --list-guest
#       prints the guest files the image would hold, "SOURCE<TAB>/PATH" a line, and builds nothing
# Contents: busybox (+ applet links), /bin/scx_sis, hackbench, cyclictest, perf, stress-ng, nice, chrt, any --extra
# binaries, all their ldd libraries and the dynamic loader, the guest files (below), the kernel
# config at /boot/config-REL (libbpf reads it for __kconfig externs; Debian kernels have no
# /proc/config.gz), /etc/sis.env and /init.
# The guest files: the guest library scripts/guest/lib.sh at /sis/lib.sh, the --guest script at
# /guest/<its name>, and each helper it sources from there (a line `. /guest/NAME`), taken from
# the script's own folder. Nothing else of the source tree goes in: an image booted for a demo or
# the bench holds no test script, and one booted for a test holds no other test's.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)

out='' config='' release='' bin='' guest='' envfile='' list=0
extras=()
while (($#)); do
  case $1 in
    --out) out=$2; shift 2 ;;
    --config) config=$2; shift 2 ;;
    --release) release=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --guest) guest=$2; shift 2 ;;
    --env-file) envfile=$2; shift 2 ;;
    --extra) extras+=("$2"); shift 2 ;;
    --list-guest) list=1; shift ;;
    *) echo "mkinitramfs: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n $guest ]] || { echo "mkinitramfs: --guest required" >&2; exit 2; }
[[ -f $guest ]] || { echo "mkinitramfs: $guest not found" >&2; exit 2; }

# The guest files for $guest, "SOURCE<TAB>/PATH" a line (the header states the rule). A helper
# the script sources must lie beside it, or the image would boot without it.
guest_files() {
  local dir lib
  dir=$(dirname "$guest")
  printf '%s\t%s\n' "$REPO/scripts/guest/lib.sh" /sis/lib.sh
  printf '%s\t%s\n' "$guest" "/guest/$(basename "$guest")"
  while read -r lib; do
    [[ -f $dir/$lib ]] ||
      { echo "mkinitramfs: $guest sources /guest/$lib, which is not in $dir" >&2; exit 1; }
    printf '%s\t%s\n' "$dir/$lib" "/guest/$lib"
  done < <(sed -n 's|^\. /guest/\([^/[:space:]]*\)[[:space:]]*$|\1|p' "$guest")
}
files=$(guest_files)
if ((list)); then
  printf '%s\n' "$files"
  exit 0
fi
[[ -n $out && -n $config && -n $release ]] || { echo "mkinitramfs: --out, --config, --release required" >&2; exit 2; }

root=$(mktemp -d "${TMPDIR:-/tmp}/sis-initramfs.XXXXXX")
trap 'rm -rf "$root"' EXIT

mkdir -p "$root"/{bin,dev,proc,sys,tmp,run,etc,boot,sis,guest,root,lib,lib64,usr,var/tmp}
# One bin directory; usr/* point back so any absolute path a tool expects resolves.
ln -s bin "$root/sbin"
ln -s ../bin "$root/usr/bin"
ln -s ../bin "$root/usr/sbin"
ln -s ../lib "$root/usr/lib"

# Copy a file to the same absolute path inside the image (dereferencing symlinks).
put() { # src [dest-inside-root]
  local dest=$root${2:-$1}
  [[ -e $dest ]] && return 0
  mkdir -p "$(dirname "$dest")"
  cp -L "$1" "$dest"
}

# Copy a dynamically linked binary and everything ldd says it needs (incl. the loader).
put_bin() { # src dest-inside-root
  local src=$1 dest=$2 lib
  [[ -x $src ]] || { echo "mkinitramfs: $src is not an executable" >&2; exit 1; }
  rm -f "$root$dest"   # replace busybox applet links of the same name
  put "$src" "$dest"
  # ldd fails on static binaries ("not a dynamic executable"): nothing to copy then.
  while read -r lib; do
    put "$lib"
  done < <(ldd "$src" 2>/dev/null | grep -oE '(^|[[:space:]])/[^[:space:]]+' | sed 's/^[[:space:]]*//' | sort -u || true)
}

busybox=$(command -v busybox) || { echo "mkinitramfs: busybox not found (apt-get install busybox-static)" >&2; exit 1; }
if ldd "$busybox" >/dev/null 2>&1; then
  echo "mkinitramfs: warning: $busybox is dynamically linked (busybox-static expected)" >&2
fi
put_bin "$busybox" /bin/busybox
for applet in $("$busybox" --list); do
  [[ -e $root/bin/$applet ]] || ln -s busybox "$root/bin/$applet"
done

need() { # name -> path of a required host tool
  command -v "$1" || { echo "mkinitramfs: $1 not found (run scripts/setup.sh)" >&2; exit 1; }
}
put_bin "$(need hackbench)" /bin/hackbench
# cyclictest (rt-tests, as hackbench): the wakeup-latency probe of latency.sh and the lab.
put_bin "$(need cyclictest)" /bin/cyclictest
put_bin "$(need stress-ng)" /bin/stress-ng
put_bin "$(need perf)" /bin/perf
# busybox has renice but no nice.
put_bin "$(need nice)" /bin/nice
put_bin "$(need chrt)" /bin/chrt
for x in "${extras[@]}"; do
  put_bin "$x" "/bin/$(basename "$x")"
done
if [[ -n $bin ]]; then
  put_bin "$bin" /bin/scx_sis
fi

while IFS=$'\t' read -r src dest; do
  cp "$src" "$root$dest"
  chmod +x "$root$dest"
done <<<"$files"

cp "$config" "$root/boot/config-$release"
cp "$HERE/init" "$root/init"
chmod +x "$root/init"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\n' >"$root/etc/group"
printf '127.0.0.1 localhost sis-vm\n' >"$root/etc/hosts"
if [[ -n $envfile ]]; then cp "$envfile" "$root/etc/sis.env"; else : >"$root/etc/sis.env"; fi

(cd "$root" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc -R 0:0 --quiet) | gzip -1 >"$out"
