#!/usr/bin/env bash
# Host checks of the Debian package (scripts/package.sh builds it), without installing it: the
# package holds what its systemd unit names (ExecStart's binary, the EnvironmentFile), the unit
# passes `systemd-analyze verify` against the package's own files and `systemd-analyze security`
# rates it 5.0 or less, the defaults file is a
# conffile, the maintainer scripts handle the unit, and the defaults file's flags parse; the
# unit waits for readiness (Type=notify) and does not restart after the exit statuses
# `scx_sis --help` marks; the package's version names the commit the binary names and sorts
# after a package of the crate's version alone; the man pages and completions are there; every
# link of the packaged README and docs resolves inside the package.
# scripts/test.sh runs it; starting the daemon as the unit does is for the VM tests.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

UNIT=scx_sis.service
UNIT_DIR=usr/lib/systemd/system
DEFAULTS=/etc/default/scx_sis

fail() {
  echo "check-package: FAIL: $*" >&2
  exit 1
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "test: the Debian package (scripts/check-package.sh)" >&2
# cargo deb prints the .deb's path last on stdout.
deb=$(scripts/package.sh --quiet --output "$tmp/" | tail -n1)
[[ -f $deb ]] || fail "scripts/package.sh made no .deb (it printed '$deb')"
echo "check-package: $(basename "$deb"):" >&2
dpkg-deb -c "$deb" | awk '{ print "  " $1, $3, $6 }' >&2

# A scratch root: the host's own units (multi-user.target and what it pulls in, for verify),
# then the package unpacked over them.
root=$tmp/root
mkdir -p "$root/$UNIT_DIR"
cp -a /usr/lib/systemd/system/. "$root/$UNIT_DIR/"
dpkg-deb -x "$deb" "$root"
unit=$root/$UNIT_DIR/$UNIT

in_package() { dpkg-deb -c "$deb" | awk '{ print $6 }' | grep -qxF ".$1"; }

in_package "/$UNIT_DIR/$UNIT" || fail "the package has no /$UNIT_DIR/$UNIT"
cmp -s "$unit" "packaging/$UNIT" || fail "the packaged $UNIT differs from packaging/$UNIT"

# ExecStart's binary: its first word, after any of systemd's prefixes (-@:+!|).
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
[[ $(grep -c '^ExecStart=' "$unit") == 1 ]] || fail "$UNIT must have exactly one ExecStart"
bin=$(sed -E 's/^[-@:+!|]*//; s/[[:space:]].*//' <<<"$exec_start")
in_package "$bin" || fail "$UNIT runs $bin, which the package does not hold"
[[ -x $root$bin ]] || fail "$bin is not executable in the package"

env_file=$(sed -n 's/^EnvironmentFile=-\{0,1\}//p' "$unit")
[[ $env_file == "$DEFAULTS" ]] || fail "$UNIT reads '$env_file', expected $DEFAULTS"
in_package "$env_file" || fail "$UNIT reads $env_file, which the package does not hold"

dpkg-deb -e "$deb" "$tmp/control"
grep -qxF "$DEFAULTS" "$tmp/control/conffiles" 2>/dev/null ||
  fail "$DEFAULTS is not a conffile (an upgrade would overwrite the admin's flags)"
# dh_installsystemd's scripts: systemd learns of the unit on install, the unit stops on removal.
grep -qs "daemon-reload" "$tmp/control/postinst" ||
  fail "the package's postinst does not reload systemd (maintainer-scripts unset in Cargo.toml?)"
grep -qs "stop $UNIT" "$tmp/control/prerm" || fail "the package's prerm does not stop $UNIT"

# verify prints a line for every problem it ignores (an unknown key, a bad value) and still
# exits 0, so any output fails too.
if ! out=$(systemd-analyze verify --root="$root" "/$UNIT_DIR/$UNIT" 2>&1) || [[ -n $out ]]; then
  fail "systemd-analyze verify $UNIT:"$'\n'"$out"
fi

# The sandbox: systemd's own rating of the unit's exposure (0 safe to 10 unsafe) stays at 5.0 or
# less, so that hardening taken out again fails here rather than in a fleet's audit.
max_exposure=5.0
exposure=$(systemd-analyze security --offline=true --root="$root" "$UNIT" 2>&1 |
  sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
[[ -n $exposure ]] || fail "systemd-analyze security rated no exposure for $UNIT"
awk -v e="$exposure" -v m="$max_exposure" 'BEGIN { exit !(e <= m) }' ||
  fail "systemd-analyze security rates $UNIT $exposure, above $max_exposure: harden it again"

# The defaults file's flags, as the unit passes them ($SCX_SIS_FLAGS split on whitespace), must
# parse: clap checks each flag before it reaches --version, which then exits without loading.
flags=$(set -a && . "$root$env_file" && echo "${SCX_SIS_FLAGS:-}")
read -ra args <<<"$flags"
version=$("$root$bin" "${args[@]}" --version 2>&1) ||
  fail "$bin rejects the flags of $DEFAULTS ($flags): $version"

# The man pages and completions (scx_sis generate-assets, from the clap definitions).
for f in /usr/share/man/man1/scx_sis.1 /usr/share/man/man1/scx_sis-tune.1 \
  /usr/share/man/man1/scx_sis-monitor.1 /usr/share/man/man1/scx_sis-trace.1 \
  /usr/share/bash-completion/completions/scx_sis /usr/share/zsh/vendor-completions/_scx_sis \
  /usr/share/fish/vendor_completions.d/scx_sis.fish; do
  in_package "$f" || in_package "$f.gz" || fail "the package has no $f"
done

# The documentation: every markdown page the package holds (the README and docs/) links only to
# files the package holds (and to headings those pages have), so `docs/...` resolves from
# /usr/share/doc/scx-sis as it does in the source tree.
doc_dir=/usr/share/doc/scx-sis
in_package "$doc_dir/README.md" || fail "the package has no $doc_dir/README.md"
# heading_anchors FILE: the anchors a markdown renderer gives FILE's headings (lower case, spaces
# to '-', punctuation but '-' and '_' dropped).
heading_anchors() {
  sed -n 's/^#\{1,6\} \{1,\}//p' "$1" | tr '[:upper:]' '[:lower:]' | sed 's/[^a-z0-9 _-]//g; s/ /-/g'
}
links_checked=0
while IFS= read -r page; do
  while IFS= read -r link; do
    case $link in http://* | https://* | mailto:*) continue ;; esac
    file=${link%%#*}
    anchor=${link#"$file"}
    anchor=${anchor#\#}
    target=$(dirname "$page")/${file:-$(basename "$page")}
    [[ -f $target ]] || fail "${page#"$root"} links to $link, which the package does not hold"
    if [[ -n $anchor && $target == *.md ]]; then
      heading_anchors "$target" | grep -qxF "$anchor" ||
        fail "${page#"$root"} links to $link, but ${target#"$root"} has no such heading"
    fi
    links_checked=$((links_checked + 1))
  done < <(grep -oE '\]\([^) ]+\)' "$page" | sed 's/^](//; s/)$//')
done < <(find "$root$doc_dir" -name '*.md' | sort)

# Readiness: systemd must wait for the scheduler to attach, or `systemctl start` reports success
# for a load that fails a second later.
grep -qx 'Type=notify' "$unit" || fail "$UNIT is not Type=notify"
# RestartPreventExitStatus= lists exactly the statuses the binary's --help marks "no restart".
no_restart=$("$root$bin" --help | sed -n '/^Exit status:/,$p' | awk '/no restart/ { print $1 }' | sort -n | xargs)
[[ -n $no_restart ]] || fail "$bin --help marks no exit status as 'no restart'"
prevent=$(sed -n 's/^RestartPreventExitStatus=//p' "$unit" | tr ' ' '\n' | sort -n | xargs)
[[ $prevent == "$no_restart" ]] ||
  fail "$UNIT's RestartPreventExitStatus='$prevent', but $bin --help marks '$no_restart'"

# The package version: <crate version>+git<count>.g<hash>[.dirty]-<revision>, the hash the one
# the binary prints, and later than a package of the crate's version alone (0.1.0-1).
pkg_version=$(dpkg-deb -f "$deb" Version)
crate_version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)
if git rev-parse HEAD >/dev/null 2>&1; then
  [[ $pkg_version =~ ^$crate_version\+git[0-9]+\.g([0-9a-f]+)(\.dirty)?-[0-9]+$ ]] ||
    fail "the package version $pkg_version does not name the commit"
  hash=${BASH_REMATCH[1]}
  [[ $version == *"-g$hash"* ]] || fail "the package is $pkg_version but its binary says: $version"
  dpkg --compare-versions "$pkg_version" gt "$crate_version-1" ||
    fail "the package version $pkg_version does not sort after $crate_version-1"
fi

echo "check-package: ok: $bin and $env_file (a conffile) in the package, systemd-analyze verify" \
  "clean, exposure $exposure (at most $max_exposure), $links_checked documentation links resolve, Type=notify, no restart after $prevent; package $pkg_version, $version;" \
  "the unit runs: $bin $flags" >&2
