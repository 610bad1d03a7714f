#!/usr/bin/env python3
"""The C++ sources git tracks follow .clang-format (clang-format 14, Debian 12's)
and keep within 120 columns, raw strings included (which clang-format leaves
as they are). Reformat with: clang-format-14 -i $(git ls-files '*.cpp' '*.h').

  check_format.py [ROOT]

Prints "N passed, N failed"."""
import pathlib, shutil, subprocess, sys

root = pathlib.Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2]
LIMIT = 120
tool = shutil.which("clang-format-14") or shutil.which("clang-format")
passed = failed = 0


def check(ok, message):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAILED: {message}")


files = subprocess.run(["git", "-C", str(root), "ls-files", "*.cpp", "*.h"], check=True, capture_output=True,
                       text=True).stdout.split()
check(tool is not None, "clang-format-14 is not installed (bash .ci/bootstrap installs it)")
check((root / ".clang-format").is_file(), ".clang-format is missing")
if tool and files:
    # One clang-format run for all files; --dry-run --Werror names each file and line it would change.
    r = subprocess.run([tool, "--dry-run", "--Werror", "--style=file"] + files, cwd=root, capture_output=True, text=True)
    wrong = sorted({line.split(":", 1)[0] for line in r.stderr.splitlines() if ": error: code should be clang-formatted" in line})
    for f in wrong:
        check(False, f"{f}: not formatted as .clang-format says (clang-format-14 -i {f})")
    check(r.returncode == 0 or wrong, f"clang-format failed: {r.stderr.strip()[:300]}")
for f in files:
    for lineno, line in enumerate((root / f).read_text(errors="replace").split("\n"), 1):
        if len(line) > LIMIT:
            check(False, f"{f}:{lineno}: {len(line)} columns (at most {LIMIT})")
    passed += 1
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
