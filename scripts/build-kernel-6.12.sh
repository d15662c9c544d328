#!/usr/bin/env bash
# Build Linux 6.12 with sched_ext from Debian's linux-source-6.12 (no Debian 6.12 binary kernel
# enables CONFIG_SCHED_CLASS_EXT). defconfig + scripts/kernel/scx.config.fragment, bzImage only,
# everything built in (no modules), so the image boots with just the test initramfs.
#
#   scripts/build-kernel-6.12.sh OUTDIR
#     -> OUTDIR/vmlinuz-<release>-scx, OUTDIR/config-<release>-scx   (about 27 min on 2 cores)
#   scripts/build-kernel-6.12.sh --config-only OUTDIR
#     -> only download, unpack and configure; leaves OUTDIR/config-<release>-scx (a minute)
#
# Environment:
#   SCX_SIS_LINUX_SOURCE_VERSION  apt version of linux-source-6.12 (default: newest available;
#                                 the prebuilt kernel used 6.12.117-1~deb12u1)
#   SCX_SIS_LINUX_SOURCE_SUITES   default "bookworm-security bookworm-backports"
#   SCX_SIS_CACHE                 download/build area: $SCX_SIS_CACHE/build (default ~/.cache/scx_sis)
#   JOBS                          make -j (default nproc)
# The source is fetched with a private apt configuration; the system's apt setup is not changed
# (the build dependencies are installed system-wide with apt-get install).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
config_only=0
if [[ ${1:-} == --config-only ]]; then config_only=1; shift; fi
out=${1:?usage: build-kernel-6.12.sh [--config-only] OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
FRAGMENT=$HERE/kernel/scx.config.fragment
CACHE=${SCX_SIS_CACHE:-$HOME/.cache/scx_sis}
BUILD=$CACHE/build
SUITES=${SCX_SIS_LINUX_SOURCE_SUITES:-bookworm-security bookworm-backports}
JOBS=${JOBS:-$(nproc)}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

log() { echo "build-kernel-6.12: $*" >&2; }
die() { echo "build-kernel-6.12: error: $*" >&2; exit 1; }

# 1. Build dependencies (pahole from dwarves is needed at *configure* time for DEBUG_INFO_BTF).
"$HERE/setup.sh" --kernel

# 2. linux-source-6.12 through a private apt configuration.
apt=$BUILD/apt
mkdir -p "$apt"/{lists/partial,cache/archives/partial,sources.d,prefs.d,trusted.d}
: >"$apt/status"
: >"$apt/sources.list"
for s in $SUITES; do
  case $s in
    *-security) echo "deb [signed-by=$KEYRING] http://deb.debian.org/debian-security $s main" ;;
    *) echo "deb [signed-by=$KEYRING] http://deb.debian.org/debian $s main" ;;
  esac >>"$apt/sources.list"
done
APT_OPTS=(
  -o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=$apt/sources.d"
  -o "Dir::Etc::Preferences=$apt/preferences" -o "Dir::Etc::PreferencesParts=$apt/prefs.d"
  -o "Dir::Etc::TrustedParts=$apt/trusted.d"
  -o "Dir::State::Lists=$apt/lists" -o "Dir::State::status=$apt/status" -o "Dir::Cache=$apt/cache"
  -o "APT::Architecture=amd64" -o "APT::Architectures::=amd64" -o "Acquire::Languages=none"
  -o "APT::Sandbox::User=$(id -un)" -o "Debug::NoLocking=1"
)
log "apt-get update ($SUITES)"
apt-get "${APT_OPTS[@]}" -qq update >&2
ver=${SCX_SIS_LINUX_SOURCE_VERSION:-}
if [[ -z $ver ]]; then
  ver=$(apt-cache "${APT_OPTS[@]}" madison linux-source-6.12 | awk -F'|' '{gsub(/ /,"",$2); print $2}' | sort -V | tail -n1)
fi
[[ -n $ver ]] || die "linux-source-6.12 not found in $SUITES"
log "linux-source-6.12 $ver"

src=$BUILD/linux-source-6.12_$ver
if [[ ! -f $src/.unpacked ]]; then
  rm -rf "$src"
  mkdir -p "$src/deb"
  (cd "$src/deb" && apt-get "${APT_OPTS[@]}" -qq download "linux-source-6.12=$ver" >&2)
  dpkg-deb -x "$src"/deb/linux-source-6.12_*.deb "$src/deb/x"
  tarball=$(find "$src/deb/x/usr/src" -name 'linux-source-6.12.tar.*' | head -n1)
  [[ -n $tarball ]] || die "no source tarball in linux-source-6.12 $ver"
  log "unpacking $(basename "$tarball")"
  tar -C "$src" -xaf "$tarball"
  rm -rf "$src/deb"
  touch "$src/.unpacked"
fi
tree=$src/linux-source-6.12
[[ -f $tree/Makefile ]] || die "$tree/Makefile missing"

# 3. Configure: defconfig, merge the fragment, resolve, then check every fragment line survived
#    (a missing dependency, e.g. no pahole for DEBUG_INFO_BTF, silently drops an option).
cd "$tree"
make -s defconfig
scripts/kconfig/merge_config.sh -m .config "$FRAGMENT" >&2
make -s olddefconfig
missing=0
while IFS= read -r line; do
  case $line in
    CONFIG_*=n) grep -qx "# ${line%=n} is not set" .config || grep -qx "$line" .config || { log "config: wanted $line"; missing=1; } ;;
    CONFIG_*=*) grep -qx "$line" .config || { log "config: wanted $line, got: $(grep -E "^(# )?${line%%=*}[= ]" .config || echo unset)"; missing=1; } ;;
  esac
done <"$FRAGMENT"
((missing == 0)) || die "merged .config lacks options of $FRAGMENT"
release=$(make -s kernelrelease)
log "configured $release (CONFIG_SCHED_CLASS_EXT=$(grep -oP '^CONFIG_SCHED_CLASS_EXT=\K.*' .config))"
if ((config_only)); then
  cp .config "$out/config-$release-scx"
  echo "$out/config-$release-scx"
  exit 0
fi

# 4. Build.
log "make -j$JOBS bzImage (about 27 min on 2 cores)"
make -j"$JOBS" bzImage >&2
cp arch/x86/boot/bzImage "$out/vmlinuz-$release-scx"
cp .config "$out/config-$release-scx"
(cd "$out" && sha256sum "vmlinuz-$release-scx" "config-$release-scx" >"SHA256SUMS")
log "done: $out/vmlinuz-$release-scx"
echo "$out/vmlinuz-$release-scx $out/config-$release-scx $release"
