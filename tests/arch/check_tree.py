#!/usr/bin/env python3
"""Tree hygiene, checked on the files git tracks (a source tree without git
is refused rather than passed):
- nothing stray at the top level (a test run's output file, an editor's
  backup): only the folders and files listed below, and file names made of
  plain characters;
- no production path into tests/: the tool's sources (lib/, passes/, tools/,
  cmake/) name no file below tests/, and GRAPHRW_IR_TESTING (the test-only
  access to the IR, ir/ir.h) is defined nowhere but in tests/;
- no source file of the tool over 500 lines (split by concern instead).
Prints "N passed, N failed"."""
import pathlib, re, subprocess, sys

root = pathlib.Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2]
TOP = {".ci", ".gitignore", "CMakeLists.txt", "README.md", "bench", "cmake", "docs", "examples", "lib", "passes",
       "schemas", "tests", "tools"}
TOOL = ("lib/", "passes/", "tools/", "cmake/")
MAX_LINES = 500

try:
    files = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], check=True, capture_output=True).stdout
except (OSError, subprocess.CalledProcessError) as e:
    print(f"FAILED: {root} is not a git checkout ({e}); the hygiene checks need git ls-files")
    print("0 passed, 1 failed")
    sys.exit(1)
files = [f for f in files.decode().split("\0") if f]

passed = failed = 0


def check(ok, message):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAILED: {message}")


for f in files:
    top = f.split("/", 1)[0]
    check(top in TOP, f"'{f}' is not a place the project keeps files (top level: {', '.join(sorted(TOP))})")
    check(re.fullmatch(r"[A-Za-z0-9._+@/-]+", f) is not None, f"'{f}': a file name with blanks or special characters")
    if f.startswith(TOOL) and (root / f).is_file():
        text = (root / f).read_text(errors="replace")
        if f.endswith((".cpp", ".h", ".in", ".inc", ".cmake", ".txt")):
            for lineno, line in enumerate(text.splitlines(), 1):
                code = line.split("//", 1)[0] if f.endswith((".cpp", ".h", ".in", ".inc")) else line.split("#", 1)[0]
                if re.search(r"\btests/", code):
                    check(False, f"{f}:{lineno}: the tool names a path below tests/: {line.strip()}")
                if "GRAPHRW_IR_TESTING" in code and f != "lib/ir/ir.h":
                    check(False, f"{f}:{lineno}: GRAPHRW_IR_TESTING outside tests/ opens the IR to this target")
        if f.endswith((".cpp", ".h")):
            n = text.count("\n")
            check(n <= MAX_LINES, f"{f}: {n} lines (at most {MAX_LINES}: split it by concern)")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
