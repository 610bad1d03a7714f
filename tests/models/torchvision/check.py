#!/usr/bin/python3
"""The real-export test: each torchvision export (export.py) through
`graphrw legalize --mode inference` (`--dim batch=2` where the export's input
declares `batch`) must exit 0, leave no Shape
op, leave at most 1.25x the nodes onnx-simplifier 0.4.36 leaves
(onnxsim-reference.json, where it has the model), pass `validate --target
popart`, and give ONNX Runtime's outputs of the original (`graphrw compare`).

  /usr/bin/python3 check.py GRAPHRW MODELS_DIR OUT_DIR
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(*args):
    r = subprocess.run(list(args), capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def main():
    graphrw, models, out = sys.argv[1:4]
    os.makedirs(out, exist_ok=True)
    reference = json.load(open(os.path.join(HERE, "onnxsim-reference.json")))["models"]
    names = sorted(f[:-5] for f in os.listdir(models) if f.endswith(".onnx"))
    failures, rows = [], []
    if len(names) < 9:
        failures.append(f"{len(names)} exports in {models}, expected 9 (export.py)")
    for key in names:
        src, dst = os.path.join(models, key + ".onnx"), os.path.join(out, key + ".popart.onnx")
        # --dim batch=2 where the export's input declares it (export.py's dynamic_batch): a dimension
        # name a model does not declare is an error.
        code, text, err = run(graphrw, "inspect", "--json", src)
        types = [i["type"] for i in json.loads(text)["graph"]["inputs"]] if code == 0 else []  # "float[batch,3,224,224]"
        dims = [d for t in types for d in t[t.find("[") + 1:-1].split(",")]
        batch = ["--dim", "batch=2"] if "batch" in dims else []
        code, _, err = run(graphrw, "-q", "legalize", src, "--mode", "inference", *batch, "-o", dst)
        if code != 0:
            failures.append(f"{key}: legalize exit {code}: {err.strip()[:400]}")
            continue
        code, text, err = run(graphrw, "inspect", "--json", dst)
        info = json.loads(text)
        nodes = info["graph"]["nodes"]
        ops = {o["op_type"]: o["count"] for g in info["graphs"] if g["kind"] == "main" for o in g["ops"]}
        if ops.get("Shape"):
            failures.append(f"{key}: {ops['Shape']} Shape ops left")
        limit = ""
        if key in reference:
            want = reference[key]["onnxsim_nodes"]
            limit = f"{nodes / want:.2f}x onnxsim's {want}"
            if nodes > 1.25 * want:
                failures.append(f"{key}: {nodes} nodes, over 1.25x onnx-simplifier's {want}")
        code, text, err = run(graphrw, "validate", "--target", "popart", dst)
        if code != 0:
            failures.append(f"{key}: validate --target popart exit {code}: {(text + err).strip()[:400]}")
        code, text, err = run(graphrw, "compare", src, dst)
        if code != 0:
            failures.append(f"{key}: compare exit {code}: {(text + err).strip()[-400:]}")
        rows.append(f"{key}: {nodes} nodes {limit}")
    print("\n".join(rows))
    if failures:
        print("\n".join(["FAILED:"] + failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
