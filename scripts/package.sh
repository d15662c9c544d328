#!/usr/bin/env bash
# Build the Debian package with cargo-deb (Cargo.toml's [package.metadata.deb]): the scx_sis
# binary, its systemd unit (packaging/scx_sis.service) and /etc/default/scx_sis. Installs the
# pinned cargo-deb first when it is missing or another version. Prints the .deb's path last.
#   scripts/package.sh                  -> target/debian/scx-sis_<version>-1_<arch>.deb
#   scripts/package.sh --output DIR/    any other cargo deb flag passes through
set -euo pipefail

CARGO_DEB_VERSION=3.8.0

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

if [[ $(cargo deb --version 2>/dev/null) != *" $CARGO_DEB_VERSION" ]]; then
  echo "package: installing cargo-deb $CARGO_DEB_VERSION" >&2
  cargo install cargo-deb --locked --version "$CARGO_DEB_VERSION" >&2
fi
cargo deb "$@"
