#!/usr/bin/python3
"""Rewrites the option tables in docs/passes.md from the passes' declarations.

  docs/update_options.py path/to/graphrw

Each block between `<!-- options: NAME ... -->` and `<!-- /options -->` is
replaced by what `graphrw schema --markdown` prints for NAME; the test
"every registered pass has ... docs" checks they agree.
"""
import os
import re
import subprocess
import sys

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "passes.md")
BLOCK = re.compile(r"<!-- options: (\S+) .*?<!-- /options -->", re.S)


def main():
    out = subprocess.run([sys.argv[1], "schema", "--markdown"], check=True, capture_output=True, text=True).stdout
    blocks = {m.group(1): m.group(0) for m in BLOCK.finditer(out)}
    text = open(DOC).read()
    missing = [m.group(1) for m in BLOCK.finditer(text) if m.group(1) not in blocks]
    if missing:
        sys.exit("no declaration for: " + ", ".join(missing))
    new = BLOCK.sub(lambda m: blocks[m.group(1)], text)
    if new != text:
        open(DOC, "w").write(new)
        print("updated", DOC)


if __name__ == "__main__":
    main()
