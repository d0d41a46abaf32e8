#!/usr/bin/env python3
"""The article's experiment: DataParallel (dp) against d2l's hand-written all-reduce (ddp-d2l).

The article found PyTorch's DataParallel faster than d2l's from-scratch strategy B. What decides
it is the cost of one message between devices against the compute of one step: d2l's all-reduce
sends every parameter tensor on its own through device 0 after backward, 2(N-1)T messages for T
tensors with nothing overlapped, where DataParallel coalesces its broadcast and its gradient
reduce into a few messages. This script sweeps the emulated link's latency (alpha, per message)
at a fixed bandwidth, runs `duet compare` for single, dp, ddp and ddp-d2l on 2 logical CPU
devices with a core each at every point, and writes:

  article.csv, article.json   one row per model, alpha and strategy: the median ms per step
                              (and its range) and phases over --repeats runs with different
                              seeds, MB per step, the worst check; the JSON adds the machine,
                              date, commit and load average
  article.png                 ms per step against alpha, one panel per model (gnuplot)
  runs/MODEL-ALPHA-REPEAT.txt each `duet compare` table, with its phase breakdown

Usage: scripts/article_experiment.py [--duet build/apps/duet] [--out DIR] [--steps N] [--models A,B]
                                    [--alphas none,10,100] [--beta GB/s] [--repeats N]
The output folder must not exist yet: nothing is ever overwritten.
"""
import argparse
import csv
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys

STRATEGIES = ["single", "dp", "ddp", "ddp-d2l"]
PHASES = ["scatter", "broadcast", "forward", "gather", "loss", "backward", "all_reduce", "step"]


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def commit(repo):
    try:
        out = subprocess.run(["git", "-C", repo, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", repo, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return out + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def link_spec(alpha_us, beta_gbps):
    return "none" if alpha_us is None else f"{alpha_us:g},{beta_gbps:g}"


def run_compare(args, model, alpha_us, repeat, work):
    name = f"{model}-{'none' if alpha_us is None else f'{alpha_us:g}us'}-{repeat}"
    out = os.path.join(work, name)
    cmd = [args.duet, "compare", "--model", model, "--devices", "2", "--cores-per-device", "1", "--link",
           link_spec(alpha_us, args.beta), "--steps", str(args.steps), "--warmup", str(args.warmup), "--strategies",
           ",".join(STRATEGIES), "--seed", str(repeat), "--no-plots", "--out", out]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"article_experiment: `{' '.join(cmd)}` failed ({result.returncode}):\n{result.stderr}")
    with open(os.path.join(args.out, "runs", name + ".txt"), "w") as f:
        f.write("$ " + " ".join(cmd) + "\n" + result.stdout)
    with open(os.path.join(out, "results.json")) as f:
        return json.load(f)


def rows_of(model, alpha_us, beta, repeats):
    """One row per strategy: the median over the repeats of its step time and of each phase."""
    rows = []
    for i, first in enumerate(repeats[0]["results"]):
        runs = [r["results"][i] for r in repeats]
        ms = [r["ms_per_step"] for r in runs]
        row = {"model": model, "alpha_us": 0 if alpha_us is None else alpha_us,
               "beta_gbps": None if alpha_us is None else beta, "link": repeats[0]["link"]["name"],
               "strategy": first["strategy"], "devices": first["devices"], "repeats": len(runs),
               "ms_per_step": statistics.median(ms), "ms_min": min(ms), "ms_max": max(ms),
               "mb_per_step": first["bytes_per_step"] / 1e6, "check_ulps": max(r["max_check_ulps"] for r in runs)}
        for phase in PHASES:
            row[phase + "_ms"] = statistics.median(r["phases_ms"][phase] for r in runs)
        rows.append(row)
    return rows


def plot(args, rows, models, alphas):
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        print("article_experiment: gnuplot not found, no article.png", file=sys.stderr)
        return
    data = os.path.join(args.out, "plot-data")
    os.makedirs(data)
    for model in models:
        for strategy in STRATEGIES:
            with open(os.path.join(data, f"{model}-{strategy}.dat"), "w") as f:
                for i, alpha in enumerate(alphas):
                    ms = [r["ms_per_step"] for r in rows
                          if r["model"] == model and r["strategy"] == strategy and r["alpha_us"] == (alpha or 0)]
                    if ms:
                        f.write(f"{i} {ms[0]}\n")
    tics = ", ".join(f'"{"none" if a is None else f"{a:g}"}" {i}' for i, a in enumerate(alphas))
    script = [
        "set terminal pngcairo size 1100,450 font ',10'",
        f"set output '{os.path.join(args.out, 'article.png')}'",
        f'set multiplot layout 1,{len(models)} title "dp against d2l\'s all-reduce (ddp-d2l) and ddp: '
        f'2 logical CPU devices, each message alpha + bytes / {args.beta:g} GB/s"',
        f"set xtics ({tics})", "set xlabel 'link latency alpha per message (us)'", "set ylabel 'ms per step'",
        "set key top left", "set grid ytics", "set yrange [0:*]", f"set xrange [-0.3:{len(alphas) - 0.7}]",
    ]
    for model in models:
        lines = [f"'{os.path.join(data, f'{model}-{s}.dat')}' using 1:2 with linespoints lw 2 title '{s}'"
                 for s in STRATEGIES]
        script += [f"set title '{model}'", "plot " + ", ".join(lines)]
    script.append("unset multiplot")
    subprocess.run([gnuplot], input="\n".join(script) + "\n", text=True, check=True)
    shutil.rmtree(data)


def main():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duet", default=os.path.join(repo, "build", "apps", "duet"))
    parser.add_argument("--out", default="article-results")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per strategy and point")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps before them")
    parser.add_argument("--repeats", type=int, default=3, help="runs per point, seeds 0, 1, ...: the rows hold medians")
    parser.add_argument("--models", default="lenet-relu,mlp")
    parser.add_argument("--alphas", default="none,10,100,300,1000", help="latencies in us; none: no link emulated")
    parser.add_argument("--beta", type=float, default=22, help="the link's bandwidth in GB/s (pcie's)")
    args = parser.parse_args()
    if os.path.exists(args.out):
        sys.exit(f"article_experiment: --out {args.out} exists; give a new folder (nothing is overwritten)")
    if not os.access(args.duet, os.X_OK):
        sys.exit(f"article_experiment: no duet at {args.duet} (build it, or pass --duet)")
    models = args.models.split(",")
    alphas = [None if a == "none" else float(a) for a in args.alphas.split(",")]
    os.makedirs(os.path.join(args.out, "runs"))
    work = os.path.join(args.out, "compare")
    rows = []
    points = [(m, a) for m in models for a in alphas]
    for k, (model, alpha) in enumerate(points, 1):
        repeats = []
        for repeat in range(args.repeats):
            print(f"[{k}/{len(points)}] {model}, link {link_spec(alpha, args.beta)}, run {repeat + 1} of {args.repeats}",
                  file=sys.stderr, flush=True)
            repeats.append(run_compare(args, model, alpha, repeat, work))
        rows += rows_of(model, alpha, args.beta, repeats)
    shutil.rmtree(work)
    with open(os.path.join(args.out, "article.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0].keys()))  # quotes the links' commas
        writer.writeheader()
        writer.writerows(rows)
    meta = {"machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "host": platform.node()},
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "commit": commit(repo), "load_average": os.getloadavg(), "steps": args.steps, "repeats": args.repeats,
            "command": " ".join([os.path.relpath(sys.argv[0], repo)] + sys.argv[1:])}
    with open(os.path.join(args.out, "article.json"), "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    plot(args, rows, models, alphas)
    print(f"wrote {args.out}/article.csv, article.json, article.png and runs/", file=sys.stderr)


if __name__ == "__main__":
    main()
