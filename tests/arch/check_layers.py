#!/usr/bin/env python3
"""graphrw's layering, checked on the sources: every #include "x.h" of a file
in one layer resolves to a header of the same or a lower layer
(support <- ir <- io <- analysis <- passes <- driver <- tools). The build
enforces it too (each layer's CMake target exposes only its own folder
upward); this names the offending line when someone widens an include path.
Prints "N passed, N failed"."""
import pathlib, re, sys

root = pathlib.Path(__file__).resolve().parents[2]
layers = [("support", root / "lib/support"), ("ir", root / "lib/ir"), ("io", root / "lib/io"),
          ("analysis", root / "lib/analysis"), ("passes", root / "passes"), ("driver", root / "lib/driver"),
          ("tools", root / "tools")]
rank = {name: i for i, (name, _) in enumerate(layers)}
home = {}
for name, folder in layers:
    for h in folder.rglob("*.h"):
        home[h.name] = name

passed = failed = 0
for name, folder in layers:
    for src in sorted(list(folder.rglob("*.cpp")) + list(folder.rglob("*.h"))):
        for lineno, line in enumerate(src.read_text().splitlines(), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m:
                continue
            header = pathlib.PurePath(m.group(1)).name
            target = home.get(header)
            if target is None:
                continue  # generated or third-party
            if rank[target] <= rank[name]:
                passed += 1
            else:
                failed += 1
                print(f"FAILED: {src.relative_to(root)}:{lineno}: layer '{name}' includes {m.group(1)} of the higher layer '{target}'")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
