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
  sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
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
# (up to 6.18: vmlinuz and config in one package).
download_kernel() { # rel
  local rel=$1 pkgs deb
  DL_DIR=$APTDIR/dl/$rel
  rm -rf "$DL_DIR"
  mkdir -p "$DL_DIR/x"
  if apt-cache "${APT_OPTS[@]}" show "linux-binary-$rel" >/dev/null 2>&1; then
    pkgs=("linux-binary-$rel" "linux-base-$rel")
  else
    pkgs=("linux-image-$rel")
  fi
  log "downloading ${pkgs[*]}"
  (cd "$DL_DIR" && apt-get "${APT_OPTS[@]}" -qq download "${pkgs[@]}" >&2) || die "apt-get download failed"
  for deb in "$DL_DIR"/*.deb; do dpkg-deb -x "$deb" "$DL_DIR/x"; done
  DL_VMLINUZ=$(find "$DL_DIR/x" -type f \( -path "*/modules/$rel/vmlinuz" -o -name "vmlinuz-$rel" \) | head -n1)
  DL_CONFIG=$(find "$DL_DIR/x" -type f \( -path "*/modules/$rel/config" -o -name "config-$rel" \) | head -n1)
  [[ -n $DL_VMLINUZ && -n $DL_CONFIG ]] || die "no vmlinuz/config for $rel in ${pkgs[*]}"
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
