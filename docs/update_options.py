#!/usr/bin/python3
"""Rewrites the option tables in docs/passes/NAME.md from the passes' declarations.

  docs/update_options.py path/to/graphrw

Each block between `<!-- options: NAME ... -->` and `<!-- /options -->` is
replaced by what `graphrw schema --markdown` prints for NAME; the test
"every registered pass has ... docs" checks they agree.
"""
import os
import re
import subprocess
import sys

DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "passes")
BLOCK = re.compile(r"<!-- options: (\S+) .*?<!-- /options -->", re.S)


def main():
    out = subprocess.run([sys.argv[1], "schema", "--markdown"], check=True, capture_output=True, text=True).stdout
    blocks = {m.group(1): m.group(0) for m in BLOCK.finditer(out)}
    for name in sorted(os.listdir(DOCS)):
        doc = os.path.join(DOCS, name)
        text = open(doc).read()
        missing = [m.group(1) for m in BLOCK.finditer(text) if m.group(1) not in blocks]
        if missing:
            sys.exit(f"{doc}: no declaration for: " + ", ".join(missing))
        new = BLOCK.sub(lambda m: blocks[m.group(1)], text)
        if new != text:
            open(doc, "w").write(new)
            print("updated", doc)


if __name__ == "__main__":
    main()
