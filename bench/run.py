#!/usr/bin/env python3
"""graphrw's benchmarks. Every figure is a ratio against a baseline measured in
the same invocation (these machines are noisy): `cp` of the same files for
I/O, the smaller model for scaling. Medians of --runs runs, interleaved, page
cache warm, dirty pages flushed (untimed) before each run. Each command runs
under graphrw-bench-spawn (posix_spawn + wait4), so time and peak RSS are the
command's own, not this script's.

  bench/run.py [--build build] [--runs 5] [--only io|external|scaling|compare] [--overwrite] [--json out.json]
               [--baseline OTHER_GRAPHRW]

With --baseline, every graphrw command also runs with that binary (e.g. the
previous commit's), interleaved in the same invocation, and the ratio
new/baseline is printed: a change's effect without the machine's noise.
"""
import argparse, json, os, shutil, statistics, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_once(spawn, cmd):
    os.sync()
    out = subprocess.run([spawn] + cmd, check=True, capture_output=True, text=True).stdout
    r = json.loads(out)
    if r["status"] != 0:
        sys.exit(f"bench: {' '.join(cmd)} failed with status {r['status']}")
    return r["seconds"], r["peak_rss_bytes"]


BASELINE = None
BASELINE_SKIP = set()  # rows not run with the baseline (--baseline-skip)


def with_baseline(cmds, graphrw):
    """Adds 'NAME @baseline' twins of the graphrw commands, run with --baseline's binary."""
    if not BASELINE:
        return cmds
    twins = {f"{k} @baseline": [BASELINE if a == graphrw else a for a in v] for k, v in cmds.items()
             if graphrw in v and k not in BASELINE_SKIP}
    return {**cmds, **twins}


def measure(spawn, cmds, runs, before=None):
    """Runs the commands interleaved, `runs` times; median seconds and max RSS per name."""
    times = {k: [] for k in cmds}
    rss = {k: 0 for k in cmds}
    items = list(cmds.items())
    for r in range(runs):
        # Each round starts one command later: on this virtual machine the first
        # touch of memory just freed (a deleted output's page cache) is sometimes
        # slow, and a fixed order would charge it to the same command every round.
        for name, cmd in items[r % len(items):] + items[: r % len(items)]:
            if before:
                before()
            t, r = run_once(spawn, cmd)
            times[name].append(t)
            rss[name] = max(rss[name], r)
    return {k: {"median_s": statistics.median(v), "runs": v, "peak_rss_bytes": rss[k]} for k, v in times.items()}


def warm(*paths):
    for path in paths:
        with open(path, "rb") as f:
            while f.read(1 << 24):
                pass


def tools(args):
    return (os.path.join(args.build, "tools", "graphrw", "graphrw"), os.path.join(args.build, "bench", "graphrw-bench-spawn"))


def io_model(args, out):
    model = os.path.join(out, "bert-base.onnx")
    if not os.path.exists(model):
        subprocess.check_call([os.path.join(args.build, "bench", "graphrw-gen-bert"), "-o", model, "--layers", "12",
                               "--hidden", "768", "--heads", "12", "--intermediate", "3072", "--vocab", "30522",
                               "--seq", "128", "--batch", "1"])
    return model


def io_bench(args, out):
    g, spawn = tools(args)
    model = io_model(args, out)
    size = os.path.getsize(model)
    warm(model)
    outputs = [os.path.join(out, n) for n in ("copy.onnx", "converted.onnx", "expanded.onnx", "opset11.onnx", "popart.onnx",
                                              "patterns.onnx", "training.onnx", "patterns-flat.onnx",
                                              "popart-training.onnx")]
    # The pattern library on the layers inlined (untimed set-up): qkv-fusion
    # matches there and folds 36 [768, 768] weights into [768, 2304] ones.
    flat = os.path.join(out, "bert-base.flat.onnx")
    if not os.path.exists(flat):
        subprocess.check_call([g, "-q", "expand", model, "-o", flat])
    warm(flat)

    def fresh():
        # Each command writes a new file (as a batch conversion into an empty folder
        # does); --overwrite keeps the previous run's outputs so each replaces one.
        if not args.overwrite:
            for f in outputs:
                if os.path.exists(f):
                    os.remove(f)
    res = measure(spawn, with_baseline({
        "cp": ["cp", model, outputs[0]],
        "convert": [g, "-q", "convert", model, "-o", outputs[1]],
        # the same read from a pipe (spooled to an unlinked temporary file and mapped)
        "convert from a pipe": ["sh", "-c", f"cat '{model}' | '{g}' -q convert - -o '{outputs[1]}'"],
        "expand": [g, "-q", "expand", model, "-o", outputs[2]],
        # down to opset 11 (functions converted with the model, types from call sites)
        "opset 11": [g, "-q", "opset", model, "--to", "11", "-o", outputs[3]],
        # the whole PopART preparation (legalize, Dropout, checkpoint, outline per layer)
        "popart rules": [g, "-q", "run", os.path.join(ROOT, "examples", "popart.rules.json"), model, "-o", outputs[4]],
        # the same preparation in training mode (legalize --mode training, checkpoint, outline)
        "popart training rules": [g, "-q", "run", os.path.join(ROOT, "bench", "rules", "popart-prep-training.rules.json"), model,
                                  "-o", outputs[8]],
        # legalize in training mode (every parameter kept and checked against the input)
        "legalize training": [g, "-q", "legalize", model, "--mode", "training", "-o", outputs[6]],
        # the whole pattern library
        "pattern library": [g, "-q", "run", os.path.join(ROOT, "bench", "rules", "pattern-library.rules.json"), model,
                            "-o", outputs[5]],
        # the same on the inlined model, where qkv-fusion folds weights (spilled, not held)
        "pattern library, inlined": [g, "-q", "run", os.path.join(ROOT, "bench", "rules", "pattern-library.rules.json"),
                                     flat, "-o", outputs[7]],
    }, g), args.runs, before=fresh)
    base = res["cp"]["median_s"]
    return {"model": "bert-base (12 layers, hidden 768, embedded weights)" + (", outputs replaced" if args.overwrite else ", fresh outputs"), "bytes": size,
            "results": {k: dict(v, ratio_to_cp=v["median_s"] / base, rss_fraction_of_file=v["peak_rss_bytes"] / size)
                        for k, v in res.items()}}


def tree_run(cmd, env):
    """Runs cmd; its time and the peak of the summed RSS of it and every descendant
    (graphrw compare's own memory and its ONNX Runtime process at the same time),
    sampled every 2 ms from /proc."""
    import time

    def tree(pid):
        pids = [pid]
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    for c in f.read().split():
                        pids += tree(int(c))
        except OSError:
            pass
        return pids

    def rss(pid):
        try:
            with open(f"/proc/{pid}/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            return 0
    os.sync()
    start = time.monotonic()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0
    while p.poll() is None:
        peak = max(peak, sum(rss(q) for q in tree(p.pid)))
        time.sleep(0.002)
    seconds = time.monotonic() - start
    if p.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd)} failed with status {p.returncode}: {p.stderr.read().decode()[:300]}")
    return seconds, peak


def compare_bench(args, out):
    """graphrw compare on BERT-base against the floor of any ONNX Runtime comparison
    (bench/ort_floor.js: two sessions one after the other, outputs compared), for a
    model ONNX Runtime reads as it is and for a PopART model graphrw maps back
    (ai.graphcore ops written out, Calls inlined: a standard-ONNX copy)."""
    g, _ = tools(args)
    model = io_model(args, out)
    popart = os.path.join(out, "compare-popart.onnx")
    if not os.path.exists(popart):
        subprocess.check_call([g, "-q", "run", os.path.join(ROOT, "examples", "popart.rules.json"), model, "-o", popart])
    ort_dir = os.environ.get("GRAPHRW_ORT_DIR", os.path.join(ROOT, "tests", "ort"))
    env = dict(os.environ, GRAPHRW_ORT_DIR=ort_dir, NODE_PATH=os.path.join(ort_dir, "node_modules"))
    floor = ["node", os.path.join(ROOT, "bench", "ort_floor.js")]
    # The floor cannot run the PopART model (no ai.graphcore kernels): both graphrw
    # runs are measured against it on the original twice.
    cmds = {
        "ORT floor, same model twice": floor + [model, model],
        "graphrw compare, same model twice": [g, "-q", "compare", model, model],
        "graphrw compare, original vs PopART": [g, "-q", "compare", model, popart],
    }
    if BASELINE:
        cmds["baseline compare, same model twice"] = [BASELINE, "-q", "compare", model, model]
        cmds["baseline compare, original vs PopART"] = [BASELINE, "-q", "compare", model, popart]
    times = {k: [] for k in cmds}
    peaks = {k: 0 for k in cmds}
    warm(model, popart)
    for _ in range(args.runs):
        for k, cmd in cmds.items():
            t, r = tree_run(cmd, env)
            times[k].append(t)
            peaks[k] = max(peaks[k], r)
    res = {k: {"median_s": statistics.median(v), "runs": v, "peak_tree_rss_bytes": peaks[k]} for k, v in times.items()}
    for k in cmds:
        if not k.startswith("ORT"):
            base = res["ORT floor, same model twice"]
            res[k]["ratio_to_floor"] = res[k]["median_s"] / base["median_s"]
            res[k]["rss_ratio_to_floor"] = res[k]["peak_tree_rss_bytes"] / base["peak_tree_rss_bytes"]
    return {"model": "bert-base (12 layers, hidden 768, local functions, embedded weights)",
            "bytes": os.path.getsize(model), "results": res}


def external_bench(args, out):
    """A model whose external data is over 2 GB, written to another folder: the data moves with it."""
    g, spawn = tools(args)
    src = os.path.join(out, "large")
    os.makedirs(src, exist_ok=True)
    model = os.path.join(src, "bert-2g.onnx")
    data = os.path.join(src, "bert-2g.onnx.data")
    if not os.path.exists(model):
        subprocess.check_call([os.path.join(args.build, "bench", "graphrw-gen-bert"), "-o", model, "--layers", "24",
                               "--hidden", "1536", "--heads", "16", "--intermediate", "6144", "--vocab", "30522",
                               "--seq", "128", "--batch", "1", "--external-data", "bert-2g.onnx.data"])
    size = os.path.getsize(model) + os.path.getsize(data)
    dests = {k: os.path.join(out, "large-" + k) for k in ("cp", "convert", "expand")}
    for d in dests.values():
        os.makedirs(d, exist_ok=True)

    def clean():
        for d in dests.values():
            for f in os.listdir(d):
                os.remove(os.path.join(d, f))
    warm(model, data)
    res = measure(spawn, {
        "cp": ["cp", model, data, dests["cp"]],
        "convert": [g, "-q", "convert", model, "-o", os.path.join(dests["convert"], "bert-2g.onnx")],
        "expand": [g, "-q", "expand", model, "-o", os.path.join(dests["expand"], "bert-2g.onnx")],
    }, args.runs, before=clean)
    base = res["cp"]["median_s"]
    return {"model": "24 layers, hidden 1536, external data", "bytes": size,
            "results": {k: dict(v, ratio_to_cp=v["median_s"] / base) for k, v in res.items()}}


# The passes run alone on the stored expanded chain (graphrw-gen-calls, /blocks.N scopes): command, then options.
PASS_ROWS = {
    "set-shapes": ["set-shapes", "--input", "X=4"],
    "place": ["place", "--ipus", "0"],
    "place stages": ["place", "--stage", "scope=/blocks.1", "--stage", "scope=/blocks.2", "--ipus", "0,1"],
    "checkpoint": ["checkpoint", "--after", "scope=/blocks.*", "--every", "10"],
    "replace": ["replace", "--select", "op_type=Neg", "--with", "ai.graphcore::Scale", "--set", "scale=-1"],
    "outline": ["outline", "--select", "scope=/blocks.*"],
    "prune": ["prune"],
    "strip-doc": ["strip-doc"],
}
# And on the same graph with a value_info entry for every value (set-shapes' output, as
# shape-inferred exports come): loading the entries and erasing the values they name.
TYPED_ROWS = {
    "convert typed": ["convert"],
    "outline typed": ["outline", "--select", "scope=/blocks.*"],
}
SCALING_ROWS = ("convert", "expand", "rules", "pattern", "fold", "opset", "legalize", *PASS_ROWS, *TYPED_ROWS)


def scaling_bench(args, out):
    g, spawn = tools(args)
    gen = os.path.join(args.build, "bench", "graphrw-gen-calls")
    rules = os.path.join(ROOT, "bench", "rules", "every-pass.rules.json")
    cmds = {}
    sizes = {"10k": 500, "1M": 50_000}  # calls of a 20-node function: nodes after expand
    for label, calls in sizes.items():
        model = os.path.join(out, f"calls-{calls}.onnx")
        if not os.path.exists(model):
            subprocess.check_call([gen, "-o", model, "--calls", str(calls), "--body-nodes", "20"])
        flat = os.path.join(out, f"calls-{calls}.flat.onnx")  # the same graph stored expanded: loading it is the work
        if not os.path.exists(flat):
            subprocess.check_call([g, "-q", "expand", model, "-o", flat])
        cmds[f"convert {label}"] = [g, "-q", "convert", flat, "-o", os.path.join(out, f"calls-{calls}.converted.onnx")]
        cmds[f"expand {label}"] = [g, "-q", "expand", model, "-o", os.path.join(out, f"calls-{calls}.expanded.onnx")]
        cmds[f"rules {label}"] = [g, "-q", "run", rules, model, "-o", os.path.join(out, f"calls-{calls}.rules.onnx")]
        cmds[f"pattern {label}"] = [g, "-q", "run", os.path.join(ROOT, "bench", "rules", "pattern-scaling.rules.json"), model,
                                    "-o", os.path.join(out, f"calls-{calls}.pattern.onnx")]
        # The passes that need types (ONNX's inference functions), on the stored expanded graph.
        cmds[f"fold {label}"] = [g, "-q", "fold", flat, "-o", os.path.join(out, f"calls-{calls}.folded.onnx")]
        cmds[f"opset {label}"] = [g, "-q", "opset", flat, "--to", "11", "-o", os.path.join(out, f"calls-{calls}.opset11.onnx")]
        cmds[f"legalize {label}"] = [g, "-q", "legalize", flat, "-o", os.path.join(out, f"calls-{calls}.legal.onnx")]
        # Issue 27 item 2 names every pass: the rest, one command each, on the stored expanded graph.
        for name, args_ in PASS_ROWS.items():
            cmds[f"{name} {label}"] = [g, "-q", *args_[:1], flat, *args_[1:], "-o", os.path.join(out, f"calls-{calls}.{name.replace(' ', '-')}.onnx")]
        typed = os.path.join(out, f"calls-{calls}.typed.onnx")
        if not os.path.exists(typed):
            subprocess.check_call([g, "-q", *PASS_ROWS["set-shapes"][:1], flat, *PASS_ROWS["set-shapes"][1:], "-o", typed])
        for name, args_ in TYPED_ROWS.items():
            cmds[f"{name} {label}"] = [g, "-q", *args_[:1], typed, *args_[1:], "-o", os.path.join(out, f"calls-{calls}.{name.replace(' ', '-')}.onnx")]
    res = measure(spawn, with_baseline(cmds, g), args.runs)
    report = {"body_nodes": 20, "nodes": {"10k": 10_000, "1M": 1_000_000}, "results": res}
    for name in SCALING_ROWS:
        report[f"ratio_{name}_1M_to_10k"] = res[f"{name} 1M"]["median_s"] / res[f"{name} 10k"]["median_s"]
    return report


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", choices=["io", "external", "scaling", "compare"])
    ap.add_argument("--overwrite", action="store_true", help="io: each run replaces the previous run's output")
    ap.add_argument("--json")
    ap.add_argument("--baseline", help="another graphrw binary to run interleaved with this build's")
    ap.add_argument("--baseline-skip", action="append", default=[], metavar="ROW",
                    help="a row (e.g. 'outline typed 1M') the baseline does not run: one it cannot finish in "
                         "reasonable time (repeatable)")
    args = ap.parse_args()
    global BASELINE
    BASELINE_SKIP.update(args.baseline_skip)
    BASELINE = os.path.abspath(args.baseline) if args.baseline else None
    out = os.path.join(ROOT, "bench", "out")
    os.makedirs(out, exist_ok=True)
    report = {"loadavg": os.getloadavg()}
    for name, fn in (("io", io_bench), ("external", external_bench)):
        if args.only in (None, name):
            report[name] = fn(args, out)
            print(f"{name}: {report[name]['model']}, {report[name]['bytes'] / 2**20:.0f} MiB")
            for k, v in report[name]["results"].items():
                print(f"  {k:10s} median {v['median_s']:.3f}s  x{v['ratio_to_cp']:.2f} of cp  "
                      f"peak RSS {v['peak_rss_bytes'] / 2**20:.1f} MiB ({100 * v['peak_rss_bytes'] / report[name]['bytes']:.1f}% of the data)")
    if args.only in (None, "compare"):
        report["compare"] = compare_bench(args, out)
        print(f"compare: {report['compare']['model']}, {report['compare']['bytes'] / 2**20:.0f} MiB")
        for k, v in report["compare"]["results"].items():
            ratio = (f"  x{v['ratio_to_floor']:.2f} of the floor's time, x{v['rss_ratio_to_floor']:.2f} of its memory"
                     if "ratio_to_floor" in v else "")
            print(f"  {k:36s} median {v['median_s']:.3f}s  peak RSS (process tree) "
                  f"{v['peak_tree_rss_bytes'] / 2**20:.0f} MiB{ratio}")
    if args.only in (None, "scaling"):
        report["scaling"] = scaling_bench(args, out)
        for k, v in report["scaling"]["results"].items():
            print(f"  {k:24s} median {v['median_s']:.3f}s  peak RSS {v['peak_rss_bytes'] / 2**20:.0f} MiB "
                  f"({v['peak_rss_bytes'] / 1e6:.0f} MB)")
        over = [k for k, v in report["scaling"]["results"].items()
                if k.endswith(" 1M") and v["peak_rss_bytes"] > 400e6]
        print(f"1M rows over 400 MB (the memory target): {', '.join(over) if over else 'none'}")
        ratios = ", ".join(f"{name} x{report['scaling'][f'ratio_{name}_1M_to_10k']:.1f}"
                           for name in SCALING_ROWS)
        print(f"scaling 1M/10k nodes: {ratios} (100 = linear)")
    for name in ("io", "external", "scaling"):
        for k, v in report.get(name, {}).get("results", {}).items():
            if BASELINE and k.endswith(" @baseline"):
                mine = report[name]["results"][k[: -len(" @baseline")]]
                print(f"  {name} {k[: -len(' @baseline')]}: this build x{mine['median_s'] / v['median_s']:.3f} of the baseline's time, "
                      f"peak RSS x{mine['peak_rss_bytes'] / v['peak_rss_bytes']:.3f}")
    report["loadavg_after"] = os.getloadavg()
    print(f"load average before {report['loadavg'][0]:.1f}, after {report['loadavg_after'][0]:.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
