#!/usr/bin/env python3
"""graphrw's benchmarks. Every figure is a ratio against a baseline measured in
the same invocation (these machines are noisy): `cp` of the same file for I/O,
the smaller model for scaling. Medians of --runs runs, page cache warm.

  bench/run.py [--build build] [--runs 5] [--only io|scaling] [--json out.json]
"""
import argparse, json, os, shutil, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_once(cmd):
    """Wall seconds and peak RSS (bytes) of one command, measured for that process alone.
    Dirty pages of earlier runs are flushed first (untimed), so no run pays for another's writes."""
    os.sync()
    start = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    elapsed = time.perf_counter() - start
    err = p.stderr.read().decode()
    p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"bench: {' '.join(cmd)} failed: {err.strip()}")
    return elapsed, usage.ru_maxrss * 1024


def measure(cmds, runs):
    """Runs the commands interleaved, `runs` times; returns median seconds and max RSS per name."""
    times = {k: [] for k in cmds}
    rss = {k: 0 for k in cmds}
    for _ in range(runs):
        for name, cmd in cmds.items():
            t, r = run_once(cmd)
            times[name].append(t)
            rss[name] = max(rss[name], r)
    return {k: {"median_s": statistics.median(v), "runs": v, "peak_rss_bytes": rss[k]} for k, v in times.items()}


def warm(path):
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def io_bench(args, out):
    model = os.path.join(out, "bert-base.onnx")
    if not os.path.exists(model):
        subprocess.check_call([os.path.join(args.build, "bench", "graphrw-gen-bert"), "-o", model, "--layers", "12",
                               "--hidden", "768", "--heads", "12", "--intermediate", "3072", "--vocab", "30522",
                               "--seq", "128", "--batch", "1"])
    size = os.path.getsize(model)
    warm(model)
    g = os.path.join(args.build, "tools", "graphrw", "graphrw")
    res = measure({
        "cp": ["cp", model, os.path.join(out, "copy.onnx")],
        "convert": [g, "-q", "convert", model, "-o", os.path.join(out, "converted.onnx")],
        "expand": [g, "-q", "expand", model, "-o", os.path.join(out, "expanded.onnx")],
    }, args.runs)
    base = res["cp"]["median_s"]
    return {"model": "bert-base (12 layers, hidden 768, embedded weights)", "bytes": size,
            "results": {k: dict(v, ratio_to_cp=v["median_s"] / base, rss_fraction_of_file=v["peak_rss_bytes"] / size)
                        for k, v in res.items()}}


def scaling_bench(args, out):
    g = os.path.join(args.build, "tools", "graphrw", "graphrw")
    gen = os.path.join(args.build, "bench", "graphrw-gen-calls")
    cmds = {}
    for calls in (10_000, 100_000):
        model = os.path.join(out, f"calls-{calls}.onnx")
        if not os.path.exists(model):
            subprocess.check_call([gen, "-o", model, "--calls", str(calls), "--body-nodes", "20"])
        cmds[f"expand {calls} calls"] = [g, "-q", "expand", model, "-o", os.path.join(out, f"calls-{calls}.expanded.onnx")]
    res = measure(cmds, args.runs)
    return {"body_nodes": 20, "results": res,
            "ratio_100k_to_10k": res["expand 100000 calls"]["median_s"] / res["expand 10000 calls"]["median_s"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", choices=["io", "scaling"])
    ap.add_argument("--json")
    args = ap.parse_args()
    out = os.path.join(ROOT, "bench", "out")
    os.makedirs(out, exist_ok=True)
    report = {}
    if args.only in (None, "io"):
        report["io"] = io_bench(args, out)
        for k, v in report["io"]["results"].items():
            print(f"{k:10s} median {v['median_s']:.3f}s  x{v['ratio_to_cp']:.2f} of cp  "
                  f"peak RSS {v['peak_rss_bytes'] / 2**20:.0f} MiB ({100 * v['rss_fraction_of_file']:.1f}% of file)")
    if args.only in (None, "scaling"):
        report["scaling"] = scaling_bench(args, out)
        for k, v in report["scaling"]["results"].items():
            print(f"{k:22s} median {v['median_s']:.3f}s  peak RSS {v['peak_rss_bytes'] / 2**20:.0f} MiB")
        print(f"scaling 100k/10k calls: x{report['scaling']['ratio_100k_to_10k']:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
