#!/usr/bin/env python3
"""Whether two graphrw binaries write the same bytes: for a refactoring that
must not change behaviour. Runs every bundled rule file, every pass's typical
command and the benchmarks' rule files on the bundled example, the PyTorch
exports in tests/models/pytorch and two generated models, with each binary,
and compares outputs, reports (times removed), exit codes and messages.

  bench/same_outputs.py OLD_GRAPHRW NEW_GRAPHRW [--build build]

Prints one line per difference and "N passed, N failed"; exit 1 on any
difference.
"""
import argparse, glob, json, os, re, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def models(build, tmp):
    found = [os.path.join(ROOT, "examples", "bert-tiny.onnx")]
    found += sorted(glob.glob(os.path.join(ROOT, "tests", "models", "pytorch", "*.onnx")))
    gen_bert = os.path.join(build, "bench", "graphrw-gen-bert")
    gen_calls = os.path.join(build, "bench", "graphrw-gen-calls")
    for gen, args, name in ((gen_bert, ["--layers", "4", "--seq", "16", "--batch", "1"], "bert4.onnx"),
                            (gen_calls, ["--calls", "200"], "calls.onnx")):
        out = os.path.join(tmp, name)
        if os.path.exists(gen) and subprocess.run([gen, "-o", out] + args, capture_output=True).returncode == 0:
            found.append(out)
    return found


def commands(model):
    """(label, argv after the binary) for one model; OUT stands for the output file."""
    rules = sorted(glob.glob(os.path.join(ROOT, "examples", "*.rules.json")))
    rules += sorted(glob.glob(os.path.join(ROOT, "bench", "rules", "*.rules.json")))
    shapes = ["--dim", "batch=1", "--dim", "sequence=8"]
    cmds = [(f"run {os.path.basename(r)}", ["run", r, model]) for r in rules]
    cmds += [
        ("convert", ["convert", model]),
        ("expand", ["expand", model, "--allow-no-match"]),
        ("expand schema ops", ["expand", model, "--schema-ops", "all", "--allow-no-match"]),
        ("fold", ["fold", model]),
        ("prune", ["prune", model]),
        ("strip-doc", ["strip-doc", model]),
        ("set-shapes", ["set-shapes", model] + shapes),
        ("opset 11", ["opset", model, "--to", "11"]),
        ("opset 17", ["opset", model, "--to", "17"]),
        ("legalize", ["legalize", model] + shapes),
        ("legalize inference", ["legalize", model, "--mode", "inference"] + shapes),
        ("outline", ["outline", model, "--select", "op_type=MatMul", "--allow-no-match"]),
        ("checkpoint", ["checkpoint", model, "--after", "op_type=Add", "--allow-no-match"]),
        ("place", ["place", model, "--stage", "op_type=MatMul", "--stage", "op_type=Add", "--allow-no-match"]),
        ("replace", ["replace", model, "--select", "op_type=Relu", "--with", "LeakyRelu", "--allow-no-match"]),
    ]
    return cmds


def run(binary, argv, out_dir):
    out = os.path.join(out_dir, "out.onnx")
    report = os.path.join(out_dir, "report.json")
    for f in (out, report):
        if os.path.exists(f):
            os.remove(f)
    r = subprocess.run([binary, "-q"] + argv + ["-o", out, "--report", report], capture_output=True)
    data = open(out, "rb").read() if os.path.exists(out) else None
    rep = None
    if os.path.exists(report):
        text = open(report).read()
        text = re.sub(r'"seconds": [0-9.e+-]+', '"seconds": 0', text)  # times differ run to run
        rep = text
    err = r.stderr.decode(errors="replace")
    return r.returncode, data, rep, err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    a = ap.parse_args()
    passed = failed = wrote = 0
    with tempfile.TemporaryDirectory() as tmp:
        out_dir = os.path.join(tmp, "out")  # one folder for both: reports name the output
        os.makedirs(out_dir)
        for model in models(a.build, tmp):
            for label, argv in commands(model):
                o = run(os.path.abspath(a.old), argv, out_dir)
                n = run(os.path.abspath(a.new), argv, out_dir)
                what = [k for k, x, y in zip(("exit code", "output", "report", "messages"), o, n) if x != y]
                if what:
                    failed += 1
                    print(f"DIFFERS: {os.path.basename(model)}: {label}: {', '.join(what)}")
                else:
                    passed += 1
                    wrote += o[1] is not None
    print(f"{wrote} of the {passed + failed} commands wrote a model")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
