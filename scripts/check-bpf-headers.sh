#!/usr/bin/env bash
# Each BPF header includes what it uses and uses what it includes, so the order of main.bpf.c's
# includes never matters and an include says what a file depends on. Needs a built tree: the scx
# and libbpf headers come from the build's output directories (cargo build first).
#
# Includes what it uses: each header compiles on its own (clang -fsyntax-only).
# Uses what it includes: for each #include "FILE" of a header or of main.bpf.c (not the <...> ones
# of scx and libbpf), the including file's own code, its comments and include lines left out,
# names at least one thing FILE defines: a function, variable, typedef, struct or enum tag, enum
# constant or macro, or a field of one of its named structs where it is accessed as one (after `.`
# or `->`). What a file defines comes from clang's AST of main.bpf.c, which includes every header
# and gives each declaration its own file, and from the file's #define lines; the names its code
# uses, from clang's raw tokens.
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
cflags=(-fsyntax-only -target bpf -D__TARGET_ARCH_x86 -I"$scx" -I"$scx/bpf-compat"
  -I"$(dirname "$libbpf")" -Isrc/bpf)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0

# One compile per CPU at a time (each parses vmlinux.h); reported in order once all are done.
for h in src/bpf/*.h; do
  while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n; done
  clang-19 "${cflags[@]}" -x c "$h" >"$tmp/${h##*/}.log" 2>&1 || : >"$tmp/${h##*/}.failed" &
done
wait
for h in src/bpf/*.h; do
  if [ -e "$tmp/${h##*/}.failed" ]; then
    echo "check-bpf-headers: $h does not compile on its own:" >&2
    grep -m 5 'error' "$tmp/${h##*/}.log" >&2
    failed=1
  fi
done

# What each file of src/bpf defines, as "FILE<TAB>name|field<TAB>NAME", from the AST's top-level
# declarations. The dump names a declaration's file only where it differs from the location
# printed before it, so the file in effect is followed through every location of every line (up
# to its first quote: a quoted type may name a file, which the dumper does not take as a
# location). Its start is the first line about src/bpf: what comes before is vmlinux.h and
# libbpf's headers, long and of no interest here.
if ! clang-19 "${cflags[@]}" -Xclang -ast-dump -fno-color-diagnostics src/bpf/main.bpf.c \
  >"$tmp/ast" 2>"$tmp/ast.log"; then
  echo "check-bpf-headers: src/bpf/main.bpf.c does not compile, so no include was checked for use:" >&2
  grep -m 5 'error' "$tmp/ast.log" >&2
  exit 1
fi
start=$(grep -n -m 1 ' <src/bpf/' "$tmp/ast" | cut -d: -f1) || start=1
tail -n "+$start" "$tmp/ast" | awk '
  # The declared name: the last word before the type that is neither a flag nor a location
  # ("" for an anonymous struct or enum).
  function declname(head,    w, n, i) {
    n = split(head, w, " ")
    for (i = n; i > 0; i--) {
      if (w[i] ~ /^(used|referenced|implicit|invalid|definition|struct|union|enum)$/) continue
      if (w[i] ~ /:[0-9]+$/ || w[i] ~ />$/) return ""
      return w[i]
    }
    return ""
  }
  {
    q = index($0, "\047")
    head = q ? substr($0, 1, q - 1) : $0
    s = head
    while (match(s, /[^ <,]+:[0-9]+:[0-9]+/)) {
      f = substr(s, RSTART, RLENGTH)
      s = substr(s, RSTART + RLENGTH)
      sub(/:[0-9]+:[0-9]+$/, "", f)
      if (f != "line" && f != "col") cur = f
    }
    if ($0 ~ /^[|`]-/) {
      kind = substr($0, 3)
      sub(/ .*/, "", kind)
      file = cur
      name = declname(head)
      if (file ~ /^src\/bpf\// && name != "" && kind ~ /^(Function|Var|Typedef|Record|Enum)Decl$/)
        print file "\tname\t" name
      # The fields of an anonymous struct (a map definition) are never reached by name.
      fields = kind == "RecordDecl" && name != ""
      constants = kind == "EnumDecl"
      next
    }
    if (file !~ /^src\/bpf\//) next
    if (constants && $0 ~ /^[| `]*[|`]-EnumConstantDecl /) print file "\tname\t" declname(head)
    if (fields && $0 ~ /^[| `]*[|`]-FieldDecl /) print file "\tfield\t" declname(head)
  }' >"$tmp/defs"

# From each file's raw tokens: its local includes ("FILE<TAB>include<TAB>INCLUDED"), its macros
# (definitions, as above) and the names its code uses ("FILE<TAB>name|field<TAB>NAME": field when
# accessed as a member). An include line's own words are no use of anything.
clang-19 -fsyntax-only -Xclang -dump-raw-tokens -x c src/bpf/*.h src/bpf/main.bpf.c 2>&1 | awk '
  !/^[a-z_]+ \047/ || !/Loc=<[^>]*>$/ { next }
  {
    file = $0
    sub(/.*Loc=</, "", file)
    sub(/:[0-9]+:[0-9]+>$/, "", file)
    tok = $1
    if (index($0, "[StartOfLine]")) directive = ""
    if (tok == "unknown" || tok == "comment") next
    if (tok == "hash" && index($0, "[StartOfLine]")) { directive = "?"; prev = tok; next }
    if (tok == "string_literal" && directive == "include") {
      match($0, /\047"[^"]*"\047/)
      print file "\tinclude\tsrc/bpf/" substr($0, RSTART + 2, RLENGTH - 4)
    }
    if (tok == "raw_identifier") {
      match($0, /\047[A-Za-z0-9_]+\047/)
      id = substr($0, RSTART + 1, RLENGTH - 2)
      if (directive == "?") directive = id
      else if (directive == "define") { print file "\tmacro\t" id; directive = "define body" }
      else if (directive != "include")
        print file "\t" (prev == "arrow" || prev == "period" ? "field" : "name") "\t" id
    }
    prev = tok
  }' | sort -u >"$tmp/tokens"

awk -F'\t' '
  FILENAME == ARGV[1] { def[$1, $2, $3] = 1; known[$1] = 1; next }
  $2 == "macro" { def[$1, "name", $3] = 1; known[$1] = 1; next }
  $2 == "include" { n[$1]++; inc[$1, n[$1]] = $3; next }
  { use[$1, $2, $3] = 1 }
  END {
    for (k in use) {
      split(k, u, SUBSEP)
      for (i = 1; i <= n[u[1]]; i++)
        if ((inc[u[1], i], u[2], u[3]) in def) used[u[1], inc[u[1], i]] = 1
    }
    for (f in n)
      for (i = 1; i <= n[f]; i++)
        if (!((f, inc[f, i]) in used)) {
          why = inc[f, i] in known ? "uses nothing it defines" \
            : "main.bpf.c does not include it, so what it defines is unknown"
          sub(/^src\/bpf\//, "", inc[f, i])
          print "check-bpf-headers: " f " includes \"" inc[f, i] "\" but " why
        }
  }' "$tmp/defs" "$tmp/tokens" | sort >"$tmp/unused"
if [ -s "$tmp/unused" ]; then
  cat "$tmp/unused" >&2
  failed=1
fi

[ $failed -eq 0 ] && echo "check-bpf-headers: every header in src/bpf compiles on its own and uses what it includes" >&2
exit $failed
