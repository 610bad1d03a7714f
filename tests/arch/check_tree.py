#!/usr/bin/env python3
"""Tree hygiene, checked on the files git tracks (a source tree without git
is refused rather than passed):
- nothing stray at the top level (a test run's output file, an editor's
  backup): only the folders and files listed below, and file names made of
  plain characters;
- no production path into tests/: the tool's sources (lib/, passes/, tools/,
  cmake/) name no file below tests/, and GRAPHRW_IR_TESTING (the test-only
  access to the IR, ir/tensor.h) is defined nowhere but in tests/;
- one definition each for what was once written again in many files: the
  default domain test (ir::isDefaultDomain, domainKey, domainShown), the
  ai.graphcore::Call test (popart::isCall), PopART pattern names;
- no source file of the tool over 500 lines (split by concern instead), and
  no function over 80 lines without a reason: a comment starting "Long:" in
  the lines just above it.
Prints "N passed, N failed"."""
import pathlib, re, subprocess, sys

root = pathlib.Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2]
TOP = {".ci", ".clang-format", ".gitignore", "CMakeLists.txt", "README.md", "bench", "cmake", "docs", "examples", "lib", "passes",
       "schemas", "tests", "tools"}
TOOL = ("lib/", "passes/", "tools/", "cmake/")
MAX_LINES = 500
MAX_FUNCTION_LINES = 80
CONTROL = re.compile(r"^\s*(if|for|while|switch|else|do|try|catch|namespace|class|struct|enum|union|return|case|default)\b")


def long_functions(text):
    """(first line, length, name) of each function over MAX_FUNCTION_LINES
    lines without a "Long:" comment just above it. Functions are found as
    clang-format lays them out: a signature starting at column 0 (namespace
    scope) or 2 (a class member) whose body closes with '}' at that column."""
    lines = text.split("\n")
    found = []
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^( {0,2})(\S.*)$", line)
        if not m or CONTROL.match(line) or line.strip().startswith(("//", "#", "}", "public", "private", "protected", "template")):
            i += 1
            continue
        indent = m.group(1)
        j, sig = i, ""
        while j < len(lines) and j < i + 8:  # the signature, up to the line opening the body
            code = lines[j].split("//")[0]
            sig += code
            if re.search(r"\{\s*$", code):
                break
            if re.search(r"(;|\})\s*$", code):
                j = len(lines)
                break
            j += 1
        head = sig.split("(")[0]
        if j >= len(lines) or j >= i + 8 or "(" not in sig or "=" in head:
            i += 1
            continue
        k = j + 1
        while k < len(lines) and not re.match("^" + indent + r"\}", lines[k]):
            k += 1
        if k >= len(lines):
            i += 1
            continue
        length = k - i + 1
        above = "\n".join(lines[max(0, i - 4):i])
        if length > MAX_FUNCTION_LINES and "// Long:" not in above:
            name = re.search(r"([~\w:]+)\s*\(", sig)
            found.append((i + 1, length, name.group(1) if name else sig.strip()[:40]))
        i = k + 1
    return found


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
                if "OpSchemaRegistry" in code and f != "lib/analysis/schemas.cpp":
                    check(False, f"{f}:{lineno}: onnx::OpSchemaRegistry outside lib/analysis/schemas.cpp: "
                                 f"use findSchema / schemaRegistry, which register the targets' ops first")
                if "GRAPHRW_IR_TESTING" in code and f != "lib/ir/tensor.h":
                    check(False, f"{f}:{lineno}: GRAPHRW_IR_TESTING outside tests/ opens the IR to this target")
                # One definition each for what was written again in many files.
                if re.search(r'[=!]= *"ai\.onnx"|"ai\.onnx" *[=!]=', code) and f != "lib/ir/labels.cpp":
                    check(False, f"{f}:{lineno}: the default domain tested by hand: use ir::isDefaultDomain, "
                                 f"ir::domainKey or ir::domainShown")
                if re.search(r'"Call"', code) and re.search(r'"ai\.graphcore"', code) and "==" in code \
                        and f != "lib/target/popart/popart.cpp":
                    check(False, f"{f}:{lineno}: ai.graphcore::Call tested by hand: use popart::isCall")
                if re.search(r'"(PreUniRepl|PostNRepl)"', code) and f != "lib/target/popart/popart.cpp":
                    check(False, f"{f}:{lineno}: a PopART pattern name outside lib/target/popart/popart.cpp")
        if f.endswith((".cpp", ".h")):
            n = text.count("\n")
            check(n <= MAX_LINES, f"{f}: {n} lines (at most {MAX_LINES}: split it by concern)")
            for line, length, name in long_functions(text):
                check(False, f"{f}:{line}: {name} is {length} lines (at most {MAX_FUNCTION_LINES}, or a "
                             f"'// Long: reason' comment above it)")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
