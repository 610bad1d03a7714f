#!/usr/bin/env python3
"""The architecture checkers catch what they are for: each runs on a small
tree made here, clean (it must pass) and with one violation at a time (it must
fail naming the file). Prints "N passed, N failed"."""
import pathlib, subprocess, sys, tempfile

here = pathlib.Path(__file__).resolve().parent
passed = failed = 0


def tree(files):
    d = pathlib.Path(tempfile.mkdtemp(prefix="graphrw-arch-"))
    base = {
        "CMakeLists.txt": "project(x)\n",
        "lib/support/error.h": "#pragma once\n",
        "lib/ir/ir.h": '#pragma once\n#include "support/error.h"\n',
        "lib/analysis/blocks.h": '#pragma once\n#include "ir/ir.h"\n',
        "passes/blocks.h": '#pragma once\n#include "analysis/blocks.h"\n',
        "passes/blocks.cpp": '#include "passes/blocks.h"\n',
        "lib/driver/cli.cpp": '#include "passes/blocks.h"\n',
        "tests/x.cpp": "#define GRAPHRW_IR_TESTING\n",
        ".clang-format": (here.parents[1] / ".clang-format").read_text(),
    }
    base.update(files)
    for name, text in base.items():
        p = d / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    subprocess.run(["git", "init", "-q", str(d)], check=True)
    subprocess.run(["git", "-C", str(d), "add", "-A"], check=True)
    return d


def expect(checker, files, ok, mention=""):
    global passed, failed
    d = tree(files)
    r = subprocess.run([sys.executable, str(here / checker), str(d)], capture_output=True, text=True)
    good = (r.returncode == 0) == ok and (ok or mention in r.stdout)
    label = f"{checker} on {sorted(files) or 'a clean tree'}"
    if good:
        passed += 1
    else:
        failed += 1
        print(f"FAILED: {label}: exit {r.returncode}, expected {'success' if ok else 'a failure naming ' + mention}\n{r.stdout}")


expect("check_layers.py", {}, True)
expect("check_layers.py", {"lib/ir/bad.cpp": '#include "passes/blocks.h"\n'}, False, "lib/ir/bad.cpp:1")
expect("check_layers.py", {"lib/ir/flat.cpp": '#include "blocks.h"\n'}, False, "lib/ir/flat.cpp:1")
expect("check_layers.py", {"passes/gone.cpp": '#include "analysis/nothing.h"\n'}, False, "no such header")
popart = {"lib/target/popart/popart.h": '#pragma once\n#include "analysis/blocks.h"\n',
          "passes/popart/place/place.h": '#pragma once\n#include "target/popart/popart.h"\n'}
expect("check_layers.py", popart, True)
expect("check_layers.py", dict(popart, **{"passes/expand/expand.cpp": '#include "target/popart/popart.h"\n'}), False,
       "passes/expand/expand.cpp:1: #include \"target/popart/popart.h\": a generic pass includes PopART")
expect("check_layers.py", dict(popart, **{"passes/expand/expand.cpp": '#include "passes/popart/place/place.h"\n'}), False,
       "passes/expand/expand.cpp:1")
expect("check_layers.py", dict(popart, **{"lib/analysis/x.cpp": '#include "target/popart/popart.h"\n'}), False,
       "layer 'analysis' includes a header of the higher layer 'target/popart'")
expect("check_format.py", {}, True)
expect("check_format.py", {"passes/ugly.cpp": "int  f( int x ){return x;}\n"}, False, "passes/ugly.cpp: not formatted")
expect("check_format.py", {"passes/wide.cpp": 'const char* k = R"(' + "x" * 120 + ')";\n'}, False,
       "passes/wide.cpp:1: 142 columns")
expect("check_tree.py", {}, True)
expect("check_tree.py", {"writes through*": "Catch output\n"}, False, "writes through*")
expect("check_tree.py", {"lib/driver/paths.h": 'const char* kDir = "/src/tests/ort";\n'}, False, "lib/driver/paths.h:1")
expect("check_tree.py", {"passes/big.cpp": "int x;\n" * 501}, False, "passes/big.cpp: 501 lines")
expect("check_tree.py", {"passes/dom.cpp": 'bool d = n.domain() == "ai.onnx";\n'}, False, "passes/dom.cpp:1: the default domain")
expect("check_tree.py", {"lib/driver/c.cpp": 'bool c = n.opType() == "Call" && n.domain() == "ai.graphcore";\n'}, False,
       "lib/driver/c.cpp:1: ai.graphcore::Call tested by hand")
expect("check_tree.py", {"passes/p.cpp": 'a.add_strings("PostNRepl");\n'}, False, "passes/p.cpp:1: a PopART pattern name")
expect("check_tree.py", {"lib/analysis/open.cpp": "#define GRAPHRW_IR_TESTING\n"}, False, "lib/analysis/open.cpp:1")
long_body = "  x += 1;\n" * 85
expect("check_tree.py", {"passes/long.cpp": "// A pass.\nint f(int x) {\n" + long_body + "  return x;\n}\n"}, False,
       "passes/long.cpp:2: f is 88 lines")
expect("check_tree.py", {"passes/long.cpp": "// Long: a table of cases.\nint f(int x) {\n" + long_body + "  return x;\n}\n"}, True)
expect("check_tree.py", {"passes/member.cpp": "class A {\n public:\n  int f(int x) {\n" + long_body.replace("  x", "    x") +
                         "    return x;\n  }\n};\n"}, False, "passes/member.cpp:3: f is 88 lines")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
