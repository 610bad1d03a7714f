#!/usr/bin/env python3
"""graphrw's layering, checked on the sources by real paths: every
#include "PREFIX/name.h" of a file in one layer must name an existing header
of the same or a lower layer:
  support <- ir <- io <- analysis <- fold <- pattern <- pass <- target/popart
    <- passes <- driver <- tools
and a project header is always included with its layer's prefix (an
unprefixed "name.h" could resolve to another layer's header of the same name).
Within passes/, a generic pass (any folder but passes/popart/) includes
neither target/popart nor a PopART pass: it reaches what a target adds through
analysis/extensions.h. The build enforces the layering too (each layer's CMake
target exposes only its own prefix upward); this names the offending line when
someone widens an include path. Prints "N passed, N failed"."""
import pathlib, re, sys

root = pathlib.Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2]
layers = [("support", root / "lib/support"), ("ir", root / "lib/ir"), ("io", root / "lib/io"),
          ("analysis", root / "lib/analysis"), ("fold", root / "lib/fold"), ("pattern", root / "lib/pattern"),
          ("pass", root / "lib/pass"), ("target/popart", root / "lib/target/popart"), ("passes", root / "passes"),
          ("driver", root / "lib/driver"), ("tools", root / "tools")]
rank = {name: i for i, (name, _) in enumerate(layers)}
folder_of = dict(layers)
# Files a layer includes from its own folder without a prefix: not headers of any layer.
local_ok = {".inc"}
POPART_PASSES = root / "passes" / "popart"

passed = failed = 0


def fail(msg):
    global failed
    failed += 1
    print(f"FAILED: {msg}")


for name, folder in layers:
    for src in sorted(list(folder.rglob("*.cpp")) + list(folder.rglob("*.h"))):
        rel = src.relative_to(root)
        for lineno, line in enumerate(src.read_text().splitlines(), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m:
                continue
            inc = pathlib.PurePosixPath(m.group(1))
            where = f"{rel}:{lineno}: {line.strip()}"
            if len(inc.parts) == 1:
                if inc.suffix in local_ok and (src.parent / inc).is_file():
                    passed += 1
                else:
                    fail(f"{where}: a project header is included as \"LAYER/{inc}\"")
                continue
            prefix = "/".join(inc.parts[:2]) if inc.parts[0] == "target" else inc.parts[0]
            if prefix not in folder_of or ".." in inc.parts:
                fail(f"{where}: '{prefix}' is not a layer prefix ({', '.join(n for n, _ in layers[:-1])})")
                continue
            target = folder_of[prefix].joinpath(*inc.parts[len(pathlib.PurePosixPath(prefix).parts):])
            generic = name == "passes" and POPART_PASSES not in src.parents
            if generic and (prefix == "target/popart" or inc.parts[:2] == ("passes", "popart")):
                fail(f"{where}: a generic pass includes PopART (use analysis/extensions.h, or move the pass "
                     f"to passes/popart/)")
                continue
            if not target.is_file():
                fail(f"{where}: no such header {target.relative_to(root)}")
            elif rank[prefix] > rank[name]:
                fail(f"{where}: layer '{name}' includes a header of the higher layer '{prefix}'")
            else:
                passed += 1
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
