#!/usr/bin/env bash
# Provide sched_ext-capable kernels for the VM tests, cached in
# ${SCX_SIS_CACHE:-$HOME/.cache/scx_sis}/kernels/<release>/{vmlinuz,config}.
#
#   scripts/kernels.sh fetch SERIES [--refresh]
#       SERIES 6.12      : our own build of Debian's linux-source-6.12 with CONFIG_SCHED_CLASS_EXT=y
#                          (prebuilt from $SCX_SIS_PREBUILT_KERNELS, else cache, else
#                          scripts/build-kernel-6.12.sh, ~30 min on 2 cores)
#       SERIES 7, 7.3, 6.19, 6.18 ... : newest Debian build of that series in trixie-backports
#                          (downloaded with a private apt configuration; the system's apt setup
#                          is never touched). Cached: later calls use no network; --refresh (or
#                          SCX_SIS_KERNEL_REFRESH=1) looks for a newer build again.
#                          When the lists no longer carry a build's config (linux-base-REL),
#                          it comes from the pool, else is derived from the image (see
#                          find_lost_config).
#       SERIES debian-6.12 (debian-X.Y): Debian's own newest linux-image-X.Y.*-amd64, which has NO
#                          sched_ext (for the "kernel without sched_ext" test), from trixie or
#                          bookworm-backports (SCX_SIS_DEBIAN_NOSCX_SUITES), private apt config too.
#     Prints exactly one line on stdout: "<vmlinuz> <config> <release>" (release = guest uname -r).
#     Progress goes to stderr.
#   scripts/kernels.sh list      cached kernels
#
# Environment: SCX_SIS_CACHE, SCX_SIS_PREBUILT_KERNELS (dir with vmlinuz-6.12*-scx, config-6.12*-scx
# and optionally SHA256SUMS), SCX_SIS_DEBIAN_MIRROR (default http://deb.debian.org/debian),
# SCX_SIS_DEBIAN_SUITES (default "trixie-backports").
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${SCX_SIS_CACHE:-$HOME/.cache/scx_sis}
KDIR=$CACHE/kernels
APTDIR=$CACHE/apt
MIRROR=${SCX_SIS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITES=${SCX_SIS_DEBIAN_SUITES:-trixie-backports}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

log() { echo "kernels: $*" >&2; }
die() { echo "kernels: error: $*" >&2; exit 1; }

usage() {
  sed -n '2,25p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# A kernel is usable if both files exist and the config has sched_ext.
check_kernel() { # dir
  [[ -s "$1/vmlinuz" && -s "$1/config" ]] && grep -qx 'CONFIG_SCHED_CLASS_EXT=y' "$1/config"
}

emit() { # dir
  local rel
  rel=$(cat "$1/release")
  echo "$1/vmlinuz $1/config $rel"
}

# Copy vmlinuz+config into $KDIR/REL atomically (a half-copied kernel is never picked up).
store_kernel() { # vmlinuz config rel -> prints cache dir
  local dest=$KDIR/$3 tmp
  tmp=$(mktemp -d "$KDIR/.tmp.XXXXXX")
  cp "$1" "$tmp/vmlinuz"
  cp "$2" "$tmp/config"
  echo "$3" >"$tmp/release"
  chmod 755 "$tmp"
  rm -rf "$dest"
  mv "$tmp" "$dest"
  echo "$dest"
}

# store_kernel for a sched_ext kernel, under the release its image reports.
install_kernel() { # vmlinuz config -> prints cache dir
  local rel
  rel=$("$HERE/vm/kver.sh" "$1")
  grep -qx 'CONFIG_SCHED_CLASS_EXT=y' "$2" || die "$2: CONFIG_SCHED_CLASS_EXT is not y"
  store_kernel "$1" "$2" "$rel"
}

# ---------------------------------------------------------------- Debian (private apt config)
APT_OPTS=()
apt_setup() {
  [[ -r $KEYRING ]] || die "$KEYRING missing (apt-get install debian-archive-keyring)"
  mkdir -p "$APTDIR"/{lists/partial,cache/archives/partial,sources.d,prefs.d,trusted.d,dl}
  : >"$APTDIR/status"
  local s
  : >"$APTDIR/sources.list"
  for s in $SUITES; do
    echo "deb [arch=amd64 signed-by=$KEYRING] $MIRROR $s main" >>"$APTDIR/sources.list"
  done
  # Everything apt reads or writes points into $APTDIR, except apt.conf(.d) (kept for proxies).
  APT_OPTS=(
    -o "Dir::Etc::SourceList=$APTDIR/sources.list"
    -o "Dir::Etc::SourceParts=$APTDIR/sources.d"
    -o "Dir::Etc::Preferences=$APTDIR/preferences"
    -o "Dir::Etc::PreferencesParts=$APTDIR/prefs.d"
    -o "Dir::Etc::TrustedParts=$APTDIR/trusted.d"
    -o "Dir::State::Lists=$APTDIR/lists"
    -o "Dir::State::status=$APTDIR/status"
    -o "Dir::Cache=$APTDIR/cache"
    -o "APT::Architecture=amd64"
    -o "APT::Architectures::=amd64"
    -o "Acquire::Languages=none"
    -o "APT::Sandbox::User=$(id -un)"
    -o "Debug::NoLocking=1"
  )
}

apt_update() { # apt_setup, then fetch the package lists of $SUITES
  apt_setup
  log "apt-get update ($SUITES, private lists in $APTDIR)"
  apt-get "${APT_OPTS[@]}" -qq update >&2 || die "apt-get update failed"
}

# Download Debian's image of REL and extract it into $APTDIR/dl/REL; sets DL_DIR, DL_VMLINUZ and
# DL_CONFIG. linux-binary-REL (6.19+: vmlinuz; config in linux-base-REL), else linux-image-REL
# (up to 6.18: vmlinuz and config in one package). The archive lists only the newest linux-base,
# so an older 6.19+ build's config comes from elsewhere: see find_lost_config.
download_kernel() { # rel
  local rel=$1 pkgs deb
  DL_DIR=$APTDIR/dl/$rel
  rm -rf "$DL_DIR"
  mkdir -p "$DL_DIR/x"
  if has_candidate "linux-binary-$rel"; then
    pkgs=("linux-binary-$rel")
    has_candidate "linux-base-$rel" && pkgs+=("linux-base-$rel")
  else
    pkgs=("linux-image-$rel")
  fi
  log "downloading ${pkgs[*]}"
  (cd "$DL_DIR" && apt-get "${APT_OPTS[@]}" -qq download "${pkgs[@]}" >&2) || die "apt-get download failed"
  for deb in "$DL_DIR"/*.deb; do dpkg-deb -x "$deb" "$DL_DIR/x"; done
  DL_VMLINUZ=$(find_in "$DL_DIR/x" vmlinuz "$rel")
  DL_CONFIG=$(find_in "$DL_DIR/x" config "$rel")
  [[ -n $DL_VMLINUZ ]] || die "no vmlinuz for $rel in ${pkgs[*]}"
  [[ -n $DL_CONFIG ]] || find_lost_config "$rel"
}

has_candidate() { # package: apt has a version of it to download (not merely a name others depend on)
  # Not grep -q: its early exit would fail the pipe (pipefail) with apt-cache's SIGPIPE.
  apt-cache "${APT_OPTS[@]}" show "$1" 2>/dev/null | grep '^Version: ' >/dev/null
}

find_in() { # dir file rel: boot/FILE-REL or modules/REL/FILE
  find "$1" -type f \( -path "*/modules/$3/$2" -o -name "$2-$3" \) | head -n1
}

# The config of a build whose linux-base the package lists no longer carry, in order:
#  1. linux-base-REL from the archive's pool, where the file may linger after the lists dropped
#     it (until the archive's cleanup removes it). Its exact version is what the listed
#     (signature-checked) linux-binary-REL depends on; no signed list covers the pool file itself,
#     so it must name that package and version, and the image's own header must name that Debian
#     version too.
#  2. A config derived from the image: only what this project reads from a config, each entry
#     read off the image (sched_ext types in its BTF, the compiler from its banner), marked as
#     derived in its first line.
# Sets DL_CONFIG or dies.
find_lost_config() { # rel
  local rel=$1 ver deb
  ver=$(apt-cache "${APT_OPTS[@]}" show "linux-binary-$rel" | sed -n 's/^Depends: //p' \
        | tr ',' '\n' | awk -v p="linux-base-$rel" '$1 == p && $2 == "(=" { sub(/\)$/, "", $3); print $3; exit }')
  [[ -n $ver ]] || die "linux-binary-$rel names no linux-base version"
  # linux-base-* is built by the source package "linux" (linux-binary-* by linux-signed-amd64).
  # apt-helper is apt's own downloader: no curl needed.
  deb=$DL_DIR/linux-base-${rel}_${ver}_amd64.deb
  log "linux-base-$rel is no longer listed; trying the pool for version $ver"
  if /usr/lib/apt/apt-helper download-file "$MIRROR/pool/main/l/linux/${deb##*/}" "$deb" >/dev/null 2>&1 \
     && [[ $(dpkg-deb -f "$deb" Package Version 2>/dev/null) == "Package: linux-base-$rel"$'\n'"Version: $ver" ]]; then
    dpkg-deb -x "$deb" "$DL_DIR/base"
    DL_CONFIG=$(find_in "$DL_DIR/base" config "$rel")
    if [[ -n $DL_CONFIG && $(image_version "$DL_VMLINUZ") == *" Debian $ver "* ]]; then
      log "config of $rel from the pool's linux-base-$rel $ver"
      return
    fi
    log "the pool's linux-base-$rel has no config or does not match the image; not using it"
  else
    log "linux-base-$rel $ver is not in the pool either"
  fi
  unpack_vmlinux "$DL_VMLINUZ" "$DL_DIR/vmlinux"
  DL_CONFIG=$DL_DIR/config-derived
  derive_config "$DL_DIR/vmlinux" "$rel" >"$DL_CONFIG"
  log "config of $rel derived from the image ($(grep -c '^CONFIG_' "$DL_CONFIG") entries)"
}

image_version() { # bzimage: the boot header's version string ("REL (builder) #1 SMP ... Debian VER (date)")
  local ptr
  ptr=$(od -An -t u2 -j $((0x20e)) -N 2 "$1" | tr -d ' ')
  dd if="$1" bs=1 skip=$((ptr + 0x200)) count=256 2>/dev/null | tr '\0' '\n' | head -n1
}

# The kernel's scripts/extract-vmlinux: try every offset where a compressor's magic appears until
# one decompresses to an ELF file.
unpack_vmlinux() { # bzimage out
  local magic tool pos
  while read -r magic tool; do
    command -v "${tool%% *}" >/dev/null || continue
    for pos in $(LC_ALL=C grep -obUaP "$magic" "$1" | cut -d: -f1); do
      # shellcheck disable=SC2086  # tool carries its flags
      tail -c+$((pos + 1)) "$1" | $tool >"$2" 2>/dev/null || true
      [[ $(head -c4 "$2" 2>/dev/null) == $'\x7fELF' ]] && return
    done
  done <<'MAGIC'
\x28\xb5\x2f\xfd zstd -dcq
\x1f\x8b\x08 gzip -dc
\xfd7zXZ\x00 xz -dc
\x5d\x00\x00\x00 lzma -dc
\x02!L\x18 lz4 -dc
MAGIC
  die "no vmlinux found inside $1 (tried those of zstd, gzip, xz, lzma, lz4 that are installed)"
}

banner() { # vmlinux rel: the "Linux version REL (...) (COMPILER, LINKER) #1 ..." line
  LC_ALL=C grep -aom1 "Linux version ${2//./\\.} ([^)]*) ([^%]*" "$1" | head -n1 | tr -d '\0'
}

banner_cc() { # vmlinux rel: the compiler as CONFIG_CC_VERSION_TEXT spells it
  banner "$1" "$2" | sed -nE 's/^Linux version [^ ]+ \([^)]*\) \((.*), GNU ld .*/\1/p'
}

# What this project reads from a kernel config: CONFIG_SCHED_CLASS_EXT (kernels.sh, harness.sh)
# and libbpf's __kconfig externs of the scx headers (CONFIG_CC_VERSION_TEXT, CONFIG_LOCALVERSION,
# CONFIG_PREEMPT_RCU, CONFIG_X86_64; weak, so an absent one reads as 0). scx_sis's own object uses
# only LINUX_KERNEL_VERSION, which libbpf takes from uname. Each entry here is read off the image.
derive_config() { # vmlinux rel
  local btf cc
  btf=$(mktemp)
  # binutils' objcopy, else LLVM's (scripts/setup.sh installs llvm-19, not binutils).
  "$(command -v objcopy || command -v llvm-objcopy-19 || echo objcopy)" -O binary \
    --only-section=.BTF "$1" "$btf" 2>/dev/null || true
  [[ -s $btf ]] || { rm -f "$btf"; die "$1 has no .BTF section (or no objcopy): cannot derive its config"; }
  cc=$(banner_cc "$1" "$2")
  [[ -n $cc ]] || { rm -f "$btf"; die "$1 has no compiler in its banner"; }
  echo "# scx_sis: derived by scripts/kernels.sh from the image of $2 (Debian's config is gone)"
  echo "# $(banner "$1" "$2")"
  echo "CONFIG_X86_64=y"
  echo "CONFIG_CC_VERSION_TEXT=\"$cc\""
  echo "CONFIG_LOCALVERSION=\"\""
  # BTF names a type or member only when the kernel has it: sched_ext_ops only with
  # SCHED_CLASS_EXT, task_struct.rcu_read_lock_nesting only with PREEMPT_RCU.
  if LC_ALL=C grep -qaF $'\0sched_ext_ops\0' "$btf"; then
    echo "CONFIG_SCHED_CLASS_EXT=y"
  else
    echo "# CONFIG_SCHED_CLASS_EXT is not set"
  fi
  if LC_ALL=C grep -qaF $'\0rcu_read_lock_nesting\0' "$btf"; then
    echo "CONFIG_PREEMPT_RCU=y"
  fi
  rm -f "$btf"
}

fetch_debian() { # series refresh
  local series=$1 refresh=$2 ptr=$KDIR/debian-$1.current rel dir
  if [[ $refresh != 1 && -s $ptr ]]; then
    dir=$KDIR/$(cat "$ptr")
    if check_kernel "$dir"; then
      log "cached $(cat "$ptr") (use --refresh to look for a newer $series build)"
      emit "$dir"
      return
    fi
  fi
  apt_update

  # Candidates: linux-binary-<rel> (6.19+: vmlinuz; config in linux-base-<rel>) and
  # linux-image-<rel> (up to 6.18: vmlinuz and config in one package). Newest release first.
  local re="^linux-(binary|image)-(${series//./\\.}\\.[0-9.]+\\+deb[0-9]+-amd64)\$"
  local rels
  rels=$( { apt-cache "${APT_OPTS[@]}" pkgnames linux-binary-; apt-cache "${APT_OPTS[@]}" pkgnames linux-image-; } \
          | sed -nE "s/$re/\\2/p" | sort -uV -r)
  [[ -n $rels ]] || die "no Debian kernel of series $series in $SUITES"
  rel=$(head -n1 <<<"$rels")
  log "newest $series build: $rel (of $(wc -l <<<"$rels") available)"

  dir=$KDIR/$rel
  if ! check_kernel "$dir"; then
    download_kernel "$rel"
    dir=$(install_kernel "$DL_VMLINUZ" "$DL_CONFIG")
    rm -rf "$DL_DIR"
  fi
  echo "$rel" >"$ptr.tmp" && mv "$ptr.tmp" "$ptr"
  emit "$dir"
}

# ---------------------------------------------------------------- Debian, without sched_ext
# Debian's own image of a series whose Debian build lacks sched_ext (6.12): the no-sched_ext test
# boots it. Own apt directory and suites, so the trixie-backports lists above are left alone.
has_noscx() { # dir: vmlinuz and config present, and the config has no sched_ext
  [[ -s "$1/vmlinuz" && -s "$1/config" ]] && ! grep -qx 'CONFIG_SCHED_CLASS_EXT=y' "$1/config"
}
fetch_debian_noscx() { # version refresh
  local ver=$1 refresh=$2 ptr=$KDIR/debian-noscx-$1.current rel dir
  if [[ $refresh != 1 && -s $ptr ]]; then
    dir=$KDIR/$(cat "$ptr")
    if has_noscx "$dir"; then
      log "cached $(cat "$ptr") (Debian $ver without sched_ext; --refresh looks for a newer one)"
      emit "$dir"
      return
    fi
  fi
  APTDIR=$CACHE/apt-noscx
  SUITES=${SCX_SIS_DEBIAN_NOSCX_SUITES:-trixie bookworm-backports}
  apt_update
  local re="^linux-image-(${ver//./\\.}\\.[0-9.]+\\+deb[0-9]+-amd64)\$"
  local rels
  rels=$(apt-cache "${APT_OPTS[@]}" pkgnames linux-image- | sed -nE "s/$re/\\1/p" | sort -uV -r)
  [[ -n $rels ]] || die "no Debian linux-image-$ver.*-amd64 in $SUITES"
  rel=$(head -n1 <<<"$rels")
  log "newest Debian $ver build: $rel (of $(wc -l <<<"$rels") available)"
  dir=$KDIR/$rel
  if ! has_noscx "$dir"; then
    download_kernel "$rel"
    if grep -qx 'CONFIG_SCHED_CLASS_EXT=y' "$DL_CONFIG"; then
      die "Debian's $rel has CONFIG_SCHED_CLASS_EXT=y: it cannot serve as the kernel without sched_ext"
    fi
    dir=$(store_kernel "$DL_VMLINUZ" "$DL_CONFIG" "$rel")
    rm -rf "$DL_DIR"
  fi
  echo "$rel" >"$ptr.tmp" && mv "$ptr.tmp" "$ptr"
  emit "$dir"
}

# ---------------------------------------------------------------- 6.12 (own build)
fetch_612() { # refresh
  local refresh=$1 ptr=$KDIR/scx-6.12.current dir
  local pre=${SCX_SIS_PREBUILT_KERNELS:-}
  if [[ -n $pre && -d $pre ]]; then
    local vmlinuz config
    vmlinuz=$(find "$pre" -maxdepth 1 -name 'vmlinuz-6.12*-scx' | sort -V | tail -n1)
    if [[ -n $vmlinuz ]]; then
      config=$pre/config-${vmlinuz##*/vmlinuz-}
      [[ -s $config ]] || die "$config missing beside $vmlinuz"
      if [[ -s $pre/SHA256SUMS ]]; then
        # Check only our two files; SHA256SUMS may list others (or not list the config).
        local sums
        sums=$(grep -E "[ *](${vmlinuz##*/}|${config##*/})\$" "$pre/SHA256SUMS" || true)
        [[ -n $sums ]] || die "$pre/SHA256SUMS does not list ${vmlinuz##*/}"
        (cd "$pre" && sha256sum --quiet -c <<<"$sums" >&2) || die "checksum mismatch in $pre"
        log "prebuilt ${vmlinuz##*/}: SHA256SUMS ok"
      fi
      local rel
      rel=$("$HERE/vm/kver.sh" "$vmlinuz")
      dir=$KDIR/$rel
      if check_kernel "$dir" && cmp -s "$vmlinuz" "$dir/vmlinuz" && cmp -s "$config" "$dir/config"; then
        log "prebuilt ${vmlinuz##*/} already cached"
      else
        log "copying prebuilt ${vmlinuz##*/} into $KDIR"
        dir=$(install_kernel "$vmlinuz" "$config")
      fi
      echo "$rel" >"$ptr.tmp" && mv "$ptr.tmp" "$ptr"
      emit "$dir"
      return
    fi
    log "no vmlinuz-6.12*-scx in $pre"
  fi
  if [[ $refresh != 1 && -s $ptr ]] && check_kernel "$KDIR/$(cat "$ptr")"; then
    log "cached $(cat "$ptr")"
    emit "$KDIR/$(cat "$ptr")"
    return
  fi
  log "building 6.12 with sched_ext (scripts/build-kernel-6.12.sh, about 30 min on 2 cores)"
  local out
  out=$(mktemp -d "$CACHE/build-6.12.XXXXXX")
  "$HERE/build-kernel-6.12.sh" "$out" >&2
  local vm cf
  vm=$(find "$out" -maxdepth 1 -name 'vmlinuz-6.12*-scx' | head -n1)
  cf=$out/config-${vm##*/vmlinuz-}
  [[ -s $vm && -s $cf ]] || die "build-kernel-6.12.sh left no vmlinuz/config in $out"
  dir=$(install_kernel "$vm" "$cf")
  rm -rf "$out"
  cat "$dir/release" >"$ptr.tmp" && mv "$ptr.tmp" "$ptr"
  emit "$dir"
}

cmd=${1:-}
case $cmd in
  fetch)
    series=${2:-}
    [[ $series =~ ^[0-9]+(\.[0-9]+)?$ || $series =~ ^debian-[0-9]+\.[0-9]+$ ]] || usage
    refresh=${SCX_SIS_KERNEL_REFRESH:-0}
    [[ ${3:-} == --refresh ]] && refresh=1
    mkdir -p "$KDIR"
    # Serialize concurrent fetches (parallel test runs share the cache).
    exec 9>"$KDIR/.lock"
    flock 9
    if [[ $series == debian-* ]]; then
      fetch_debian_noscx "${series#debian-}" "$refresh"
    elif [[ $series == 6.12 ]]; then
      fetch_612 "$refresh"
    else
      fetch_debian "$series" "$refresh"
    fi
    ;;
  list)
    for d in "$KDIR"/*/; do
      [[ -d $d ]] && check_kernel "${d%/}" && emit "${d%/}"
    done
    true
    ;;
  *) usage ;;
esac
