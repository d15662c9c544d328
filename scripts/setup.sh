#!/usr/bin/env bash
# Install everything needed to build scx_sis and to run its VM tests (Debian 12/13).
# Idempotent and fast: apt is only touched when a package is actually missing.
#   scripts/setup.sh            build + VM test packages
#   scripts/setup.sh --kernel   also the packages needed by scripts/build-kernel-6.12.sh
set -euo pipefail

PKGS=(
  # build: BPF compiler + libbpf-sys / bindgen deps
  clang-19 clang-format-19 libclang-19-dev llvm-19 libelf-dev zlib1g-dev pkg-config make
  # VM harness: emulator, initramfs tools, guest workloads
  qemu-system-x86 busybox-static cpio gzip rt-tests linux-perf stress-ng
  # scripts/kernels.sh: private apt fetch of Debian kernels (trixie keys are in bookworm's keyring)
  debian-archive-keyring gpgv
  # scripts/kernels.sh, when it must derive a config from a 6.19+ image (zstd-compressed)
  zstd
  # scripts/check-package.sh: systemd-analyze verify; dpkg-shlibdeps for the package's Depends
  systemd dpkg-dev
)
if [[ "${1:-}" == "--kernel" ]]; then
  PKGS+=(build-essential bison flex libssl-dev dwarves bc xz-utils)
fi

missing=()
for p in "${PKGS[@]}"; do
  # dpkg -s succeeds for removed-but-configured packages too; check the status line.
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing: ${missing[*]}" >&2
  SUDO=()
  [[ $(id -u) -eq 0 ]] || SUDO=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update -qq
  "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
else
  echo "setup: all ${#PKGS[@]} packages present" >&2
fi

if ! command -v cargo >/dev/null 2>&1 && [[ ! -x "$HOME/.cargo/bin/cargo" ]]; then
  echo "setup: WARNING: no Rust toolchain (cargo) found; install one with rustup" >&2
fi
