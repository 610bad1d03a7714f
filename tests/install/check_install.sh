#!/usr/bin/env bash
# `cmake --install` and `cpack -G DEB` from a built tree: the binary, schemas,
# examples, shell completion (exercised, not just present) and man pages.
#   check_install.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$work/usr" >/dev/null
p="$work/usr"
"$p/bin/graphrw" --version | grep -q '^graphrw ' || fail "installed graphrw --version"
for f in share/graphrw/schemas/graphcore-ops.json share/graphrw/schemas/popart-ops.json \
         share/graphrw/schemas/rules.schema.json share/graphrw/examples/bert-tiny.onnx \
         share/graphrw/examples/popart.rules.json share/graphrw/examples/patterns/gelu.rules.json \
         share/bash-completion/completions/graphrw share/zsh/vendor-completions/_graphrw \
         share/man/man1/graphrw.1 share/man/man1/graphrw-expand.1 share/man/man1/graphrw-run.1 \
         share/doc/graphrw/README.md; do
  [ -s "$p/$f" ] || fail "not installed: $f"
done
[ ! -e "$p/share/graphrw/schemas/tools" ] || fail "schemas/tools (generator scripts) installed"
# One man page per command --help lists, and --help lists every command: the
# fixed ones and every registered pass (the rule-file schema names them).
listed=$("$p/bin/graphrw" --help | sed -n '/^Subcommands:/,$p' | awk 'NR>1 && /^  [a-z]/{print $1}')
passes=$("$p/bin/graphrw" schema | python3 -c 'import json,sys
s = json.load(sys.stdin)
names = set()
def walk(x):
    if isinstance(x, dict):
        p = x.get("properties", {}).get("pass", {})
        if isinstance(p, dict) and "const" in p: names.add(p["const"])
        for v in x.values(): walk(v)
    elif isinstance(x, list):
        for v in x: walk(v)
walk(s)
print("\n".join(sorted(names)))')
[ "$(echo "$passes" | wc -w)" -ge 11 ] || fail "graphrw schema names $(echo "$passes" | wc -w) passes"
for cmd in inspect convert run report schema help compare completion validate $passes; do
  echo "$listed" | grep -qx "$cmd" || fail "graphrw --help does not list $cmd"
done
for cmd in $listed; do
  [ -s "$p/share/man/man1/graphrw-$cmd.1" ] || fail "no man page for $cmd"
  grep -q '^\.TH' "$p/share/man/man1/graphrw-$cmd.1" || fail "graphrw-$cmd.1 is not a man page"
  name=$(sed -n '/^\.SH NAME/{n;p;q}' "$p/share/man/man1/graphrw-$cmd.1")
  summary=$("$p/bin/graphrw" "$cmd" --help | head -1 | tr ';' ',')
  # NAME as man -k lists it: the page's name, then the command's summary.
  [ "$name" = "graphrw-$cmd \- $summary" ] || fail "graphrw-$cmd.1's NAME is '$name'"
  grep -q "^\.TH GRAPHRW-$(echo "$cmd" | tr a-z A-Z) " "$p/share/man/man1/graphrw-$cmd.1" || fail "graphrw-$cmd.1's title"
done
[ "$(ls "$p"/share/man/man1/graphrw-*.1 | wc -l)" -eq "$(echo "$listed" | wc -w)" ] || fail "man pages and commands differ"
grep -qF -- '\fB\-\-schema\-ops\fR' "$p/share/man/man1/graphrw-expand.1" || fail "expand's man page lacks its options"
grep -q 'graphrw expand model.onnx' "$p/share/man/man1/graphrw-expand.1" || fail "expand's man page lacks its examples"

# bash: complete commands, flags, flag values.
complete_bash() {  # words... (the last one is being completed)
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); _graphrw; printf "%s\n" "${COMPREPLY[@]}"' \
    _ "$p/share/bash-completion/completions/graphrw" "$@"
}
[ "$(complete_bash graphrw exp)" = expand ] || fail "bash: 'exp' -> expand"
complete_bash graphrw expand --sch | grep -qx -- --schema-ops || fail "bash: expand --sch"
complete_bash graphrw -v outline m.onnx --mo | grep -qx -- --mode || fail "bash: flags after a global flag and a model"
[ "$(complete_bash graphrw outline m.onnx --mode fu)" = function ] || fail "bash: --mode values"
[ "$(complete_bash graphrw validate m.onnx --target p)" = popart ] || fail "bash: --target values"
[ "$(complete_bash graphrw help ou)" = outline ] || fail "bash: help COMMAND"
[ "$(complete_bash graphrw completion b)" = bash ] || fail "bash: completion's shell"
[ "$(complete_bash graphrw completion z)" = zsh ] || fail "bash: completion's shell (zsh)"

# zsh: the function file parses, defines _graphrw, and lists every command.
zsh -n "$p/share/zsh/vendor-completions/_graphrw" || fail "zsh: syntax"
zsh -c "source '$p/share/zsh/vendor-completions/_graphrw' 2>/dev/null; whence -w _graphrw" | grep -q function || fail "zsh: no _graphrw"
for cmd in $listed; do
  grep -q "^    '$cmd:" "$p/share/zsh/vendor-completions/_graphrw" || fail "zsh: command $cmd missing"
done
grep -q "'1:value:(bash zsh)'" "$p/share/zsh/vendor-completions/_graphrw" || fail "zsh: completion's shell"

# A Debian package with the same files and the shared libraries as dependencies.
(cd "$work" && cpack --config "$build/CPackConfig.cmake" -G DEB -B "$work/pkg" >"$work/cpack.log" 2>&1) ||
  { cat "$work/cpack.log" >&2; fail "cpack -G DEB"; }
deb=$(ls "$work"/pkg/*.deb)
dpkg-deb -c "$deb" > "$work/contents.txt"
grep -q '\./usr/bin/graphrw$' "$work/contents.txt" || fail ".deb lacks usr/bin/graphrw"
grep -q 'usr/share/man/man1/graphrw-expand\.1' "$work/contents.txt" || fail ".deb lacks the man pages"
grep -q 'usr/share/bash-completion/completions/graphrw$' "$work/contents.txt" || fail ".deb lacks the bash completion"
dpkg-deb -f "$deb" Depends | grep -q 'libonnx' || fail ".deb does not depend on libonnx"
echo "install, completion, man pages and .deb: ok"
