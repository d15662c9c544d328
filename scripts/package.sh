#!/usr/bin/env bash
# Build the Debian package with cargo-deb (Cargo.toml's [package.metadata.deb]): the scx_sis
# binary, its systemd unit (packaging/scx_sis.service), /etc/default/scx_sis, the man pages and
# the bash, zsh and fish completions. Installs the
# pinned cargo-deb first when it is missing or another version. Prints the .deb's path last.
#   scripts/package.sh                  -> target/debian/scx-sis_<version>-1_<arch>.deb
#   scripts/package.sh --output DIR/    any other cargo deb flag passes through
# The version is the crate's with the commit, <crate version>+git<commit count>.g<hash>[.dirty]
# (0.1.0+git155.g1a2b3c4-1): the count makes a later commit's package sort after an earlier
# one's, so apt upgrades it; the hash is the one `scx_sis --version` prints. Outside git it is
# the crate's version alone.
set -euo pipefail

CARGO_DEB_VERSION=3.8.0

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

if [[ $(cargo deb --version 2>/dev/null) != *" $CARGO_DEB_VERSION" ]]; then
  echo "package: installing cargo-deb $CARGO_DEB_VERSION" >&2
  cargo install cargo-deb --locked --version "$CARGO_DEB_VERSION" >&2
fi
# deb_version: the package version (without the revision) of this tree.
deb_version() {
  local base count hash dirty=
  base=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)
  if count=$(git rev-list --count HEAD 2>/dev/null) && hash=$(git rev-parse --short HEAD); then
    git diff --quiet HEAD 2>/dev/null || dirty=.dirty
    echo "$base+git$count.g$hash$dirty"
  else
    echo "$base"
  fi
}
# The man pages and completions come from the binary's own clap definitions.
cargo build --release --quiet --bin scx_sis >&2
rm -rf target/assets
target/release/scx_sis generate-assets target/assets 2>/dev/null
cargo deb --deb-version "$(deb_version)-1" "$@"
