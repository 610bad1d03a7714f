#!/usr/bin/env bash
# .ci/bootstrap on the machines a new user may have, without installing or
# building anything: the script runs on a copy of the files it reads, with a
# PATH that holds only the programs it may call, where apt-get, dpkg,
# dpkg-query and cmake are stand-ins that record their calls (and fail when a
# case says so). Node.js and npm are the real ones where a case has them, with
# npm's registry, cache and global folder pointed into the case's folder.
# Prints "N passed, N failed".
set -uo pipefail
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/graphrw-bootstrap-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
check() {  # CONDITION-EXIT-CODE MESSAGE
  if [ "$1" = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $case_name: $2"; fi
}

# The programs .ci/bootstrap may call besides the stand-ins.
real_tools=(bash env dirname mktemp rm grep sed tail head tr cat)

# new_case NAME [node]: a fresh folder with the repository's files bootstrap
# reads, and a bin folder; "node" puts the real node and npm on its PATH.
new_case() {
  case_name=$1
  case_dir="$work/$1"
  mkdir -p "$case_dir/repo/.ci" "$case_dir/repo/tests/ort" "$case_dir/bin" "$case_dir/tmp" "$case_dir/home"
  cp "$source_dir/.ci/bootstrap" "$case_dir/repo/.ci/"
  cp "$source_dir/tests/ort/package.json" "$source_dir/tests/ort/package-lock.json" "$case_dir/repo/tests/ort/"
  for t in "${real_tools[@]}"; do ln -s "$(command -v "$t")" "$case_dir/bin/$t"; done
  if [ "${2:-}" = node ]; then
    ln -s "$(command -v node)" "$case_dir/bin/node"
    ln -s "$(command -v npm)" "$case_dir/bin/npm"
  fi
  calls="$case_dir/calls"
  : >"$calls"
  # dpkg-query: every package installed but those in MISSING.
  cat >"$case_dir/bin/dpkg-query" <<'EOF'
#!/bin/bash
pkg=${!#}
for m in $MISSING; do [ "$m" = "$pkg" ] && exit 1; done
printf 'install ok installed'
EOF
  # dpkg: --audit prints AUDIT; anything else is recorded.
  cat >"$case_dir/bin/dpkg" <<'EOF'
#!/bin/bash
if [ "$1" = --audit ]; then printf '%s' "${AUDIT:-}"; exit 0; fi
echo "dpkg $*" >>"$CALLS"
EOF
  # apt-get: recorded; with APT_FAIL, fails as apt does on an unknown package.
  cat >"$case_dir/bin/apt-get" <<'EOF'
#!/bin/bash
echo "apt-get $*" >>"$CALLS"
if [ -n "${APT_FAIL:-}" ] && [ "$1" = install ]; then
  echo "Reading package lists..."; echo "E: Unable to locate package $APT_FAIL"; exit 100
fi
EOF
  # cmake: recorded; with CMAKE_FAIL=configure, the configure step fails as CMake does.
  cat >"$case_dir/bin/cmake" <<'EOF'
#!/bin/bash
echo "cmake $*" >>"$CALLS"
if [ "${CMAKE_FAIL:-}" = configure ] && [ "$1" = -S ]; then
  echo "-- The CXX compiler identification is GNU 12.2.0"
  echo "CMake Error at CMakeLists.txt:21 (find_package):"
  echo "  Could not find a package configuration file provided by \"ONNX\""
  exit 1
fi
EOF
  chmod +x "$case_dir/bin/"{dpkg-query,dpkg,apt-get,cmake}
}

# run ARGS...: bootstrap with the case's PATH only; sets rc, out, err.
run() {
  env -i PATH="$case_dir/bin" HOME="$case_dir/home" TMPDIR="$case_dir/tmp" CALLS="$calls" \
    MISSING="${MISSING:-}" AUDIT="${AUDIT:-}" APT_FAIL="${APT_FAIL:-}" CMAKE_FAIL="${CMAKE_FAIL:-}" \
    npm_config_registry=http://127.0.0.1:9/ npm_config_cache="$case_dir/npm-cache" \
    npm_config_prefix="$case_dir/npm-global" npm_config_fetch_retries=0 npm_config_update_notifier=false \
    "$(command -v bash)" "$case_dir/repo/.ci/bootstrap" "$@" >"$case_dir/out" 2>"$case_dir/err"
  rc=$?
  out=$(cat "$case_dir/out")
  err=$(cat "$case_dir/err")
}
lines() { printf '%s' "$1" | grep -c '' || true; }
called() { grep -qF -- "$1" "$calls"; }

# 1. The README's first command on a fresh clone of a machine with every package but no Node.js, no npm
#    and no tests/ort/node_modules (it used to stop there silently, exit 2).
new_case tool-fresh
run --tool
check $((rc != 0)) "exit $rc, stderr: $err"
check $(($(lines "$err") != 0)) "stderr not empty: $err"
called "cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release" || check 1 "no Release configure: $(cat "$calls")"
called "cmake --build build --target graphrw" || check 1 "the tool was not built: $(cat "$calls")"
! called apt-get || check 1 "apt-get ran with every package installed"
check $(($(grep -c . "$calls") != 2)) "calls other than configure and build: $(cat "$calls")"

# 2. Packages missing and no apt-get: one line naming the step and the packages; nothing built.
new_case no-apt
rm "$case_dir/bin/apt-get"
MISSING="libcli11-dev help2man" run --tool
check $((rc != 1)) "exit $rc, not 1"
check $(($(lines "$err") != 1)) "not one line: $err"
[[ "$err" == *"step 'install Debian packages' failed"*"apt-get not found"*"libcli11-dev help2man"* ]]
check $? "the line does not name the step, the cause and the packages: $err"
! called cmake || check 1 "built without its packages"

# 3. apt-get fails: the step, its exit code and apt's own error line; the whole output kept.
new_case apt-fails
MISSING=libcli11-dev APT_FAIL=libcli11-dev run --tool
check $((rc != 1)) "exit $rc, not 1"
check $(($(lines "$err") != 1)) "not one line: $err"
[[ "$err" == "bootstrap: step 'install Debian packages (libcli11-dev)' failed (exit 100): E: Unable to locate package libcli11-dev (its output: "*")" ]]
check $? "unexpected line: $err"
log=$(sed -n 's/.*(its output: \(.*\))$/\1/p' <<<"$err")
grep -q "Reading package lists" "$log" 2>/dev/null
check $? "the step's output is not kept in '$log'"

# 4. An earlier dpkg run cut off half-way: finished before apt-get installs.
new_case dpkg-interrupted
MISSING=help2man AUDIT="The following packages are only half configured" run --tool
check $((rc != 0)) "exit $rc: $err"
check "$( [ "$(head -1 "$calls")" = "dpkg --configure -a" ]; echo $?)" "dpkg --configure -a was not run first: $(cat "$calls")"
called "apt-get install -y -qq --no-install-recommends help2man" || check 1 "help2man not installed: $(cat "$calls")"

# 5. CMake cannot configure: the step and CMake's error with its explanation, in one line.
new_case configure-fails
CMAKE_FAIL=configure run --tool
check $((rc != 1)) "exit $rc, not 1"
check $(($(lines "$err") != 1)) "not one line: $err"
[[ "$err" == *"step 'configure build/ (cmake)' failed (exit 1): CMake Error at CMakeLists.txt:21 (find_package): Could not find a package configuration file provided by \"ONNX\""* ]]
check $? "unexpected line: $err"
! called "cmake --build" || check 1 "built after a failed configure"

# 6. --with-compare with npm offline: the tool is built first, then one line naming the npm step,
#    npm's own error and that graphrw itself is built.
new_case compare-offline node
run --tool --with-compare
check $((rc != 1)) "exit $rc, not 1"
check $(($(lines "$err") != 1)) "not one line: $err"
[[ "$err" == *"step 'install ONNX Runtime 1.30.0 into $case_dir/npm-global/lib/node_modules (npm install -g)' failed (exit 1): npm error FetchError: request to http://127.0.0.1:9/onnxruntime-node failed"*"graphrw itself is built"* ]]
check $? "unexpected line: $err"
called "cmake --build build --target graphrw" || check 1 "the tool was not built before npm: $(cat "$calls")"

# 7. --with-compare without Node.js: Debian's nodejs and npm are installed with the rest.
new_case compare-no-node
run --tool --with-compare
called "apt-get install -y -qq --no-install-recommends nodejs npm" || check 1 "nodejs and npm not installed: $(cat "$calls")"
[[ "$err" == *"step 'find Node.js and npm' failed (exit 127): node not found on PATH"* ]]  # the stand-in apt installs nothing
check $? "unexpected line: $err"

# 8. The full set-up after one cut off in npm: tests/ort/node_modules holds a package.json of the right
#    version but no runtime, and is installed again (npm ci; offline here, so it fails naming that step).
new_case half-finished node
mkdir -p "$case_dir/repo/tests/ort/node_modules/onnxruntime-node"
echo '{ "name": "onnxruntime-node", "version": "1.30.0", "main": "dist/index.js" }' \
  >"$case_dir/repo/tests/ort/node_modules/onnxruntime-node/package.json"
run
check $((rc != 1)) "exit $rc, not 1"
[[ "$err" == "bootstrap: step 'install ONNX Runtime 1.30.0 into tests/ort (npm ci)' failed (exit 1): npm error "* ]]
check $? "the half-finished install was not installed again: $err"
called "cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRAPHRW_TESTS=ON" || check 1 "no full configure"

# 9. The full set-up run again where everything is in place: no package manager is called at all.
#    (The real onnxruntime-node the suite's own set-up installed, linked in.)
real_ort="$source_dir/tests/ort/node_modules/onnxruntime-node"
new_case complete node
mkdir -p "$case_dir/repo/tests/ort/node_modules" "$case_dir/npm-global/lib/node_modules"
ln -s "$real_ort" "$case_dir/repo/tests/ort/node_modules/onnxruntime-node"
ln -s "$real_ort" "$case_dir/npm-global/lib/node_modules/onnxruntime-node"
run
check $((rc != 0)) "exit $rc: $err"
check $(($(lines "$err") != 0)) "stderr not empty: $err"
! called apt-get || check 1 "apt-get ran: $(cat "$calls")"
# (npm root -g writes a debug log into the cache folder; anything npm fetched would be in _cacache.)
[ ! -d "$case_dir/npm-cache/_cacache" ] && [ -L "$case_dir/npm-global/lib/node_modules/onnxruntime-node" ]
check $? "npm fetched or installed something although everything was installed"

# 10. Bad usage: exit 2, one line.
new_case usage
run --tools
check $((rc != 2)) "exit $rc, not 2"
[ "$err" = "bootstrap: unknown option '--tools' (--tool, --with-compare)" ]
check $? "unexpected line: $err"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
