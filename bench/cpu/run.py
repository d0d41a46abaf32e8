#!/usr/bin/python3
"""`make bench`: duet against PyTorch on this machine's CPU, side by side, in one run.

For each model it alternates fresh processes (duet, PyTorch on 1..N threads, duet, ...) for
--repeats rounds, takes the median of each configuration, compares duet with PyTorch at its
best thread count, and holds duet's GFLOP/s against the GEMM peak that bench/gemm_peak
measures. It prints one Markdown table on stdout (progress goes to stderr) and writes the
whole result, every sample included, as JSON. It builds nothing: `make bench` does that first.

With --epochs N it compares whole epochs instead (bench/cpu/epochs.py): `duet train`, the real CLI
with its defaults, against a plain PyTorch loop (bench/cpu/torch_epochs.py) with the same model,
batch size and lr, both timed per epoch by their training passes and, apart, by the test-set
evaluation after each epoch; medians of --repeats alternating rounds again, PyTorch on 1..N
threads, its best compared.

    /usr/bin/python3 bench/cpu/run.py --build-dir build [--strategies] [--out bench/results.json]
    /usr/bin/python3 bench/cpu/run.py --build-dir build --epochs 3 [--models mlp] [--repeats 3]
"""
import argparse
import datetime
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "parallel"))  # strategies.py

import epochs  # noqa: E402
import fashion_mnist_np  # noqa: E402
import strategies  # noqa: E402
from placement import placement  # noqa: E402
from processes import BenchError, progress, run_undisturbed  # noqa: E402
from summary import neighbour_load, summarize  # noqa: E402
from table import epochs_table, table  # noqa: E402

# (warm-up, timed) training batches of 256 per run: a few seconds of training each, so the
# whole `make bench` stays within about 5 minutes on a 2-core machine.
WORKLOADS = {"mlp": (20, 500), "lenet": (10, 80), "lenet-relu": (10, 50)}
BATCH_SIZE, LR = 256, 0.1
TARGETS = {"duet_bench": "duet_bench", "gemm_peak": "gemm_peak", "duet": "duet_cli",
           "core_latency": "core_latency"}  # program: its CMake target


def parse_args():
    p = argparse.ArgumentParser(description="duet vs PyTorch on the CPU (make bench)")
    p.add_argument("--build-dir", default=os.path.join(HERE, "..", "..", "build"))
    p.add_argument("--out", default=os.path.join(HERE, "..", "results.json"), help="where the JSON goes")
    p.add_argument("--repeats", type=int, default=5, help="alternating rounds; the median is reported")
    p.add_argument("--models", default=",".join(WORKLOADS), help="comma-separated: " + ", ".join(WORKLOADS))
    p.add_argument("--max-torch-threads", type=int, default=os.cpu_count(),
                   help="PyTorch runs on 1..this many threads (default: every core)")
    p.add_argument("--scale", type=float, default=1.0, help="multiplies the timed batch counts (0.1 for a smoke test)")
    p.add_argument("--strategies", action="store_true",
                   help="also run `duet compare` (single, dp, ddp on 2 logical CPU devices)")
    p.add_argument("--retries", type=int, default=3,
                   help="reruns of a run during which other processes used over 10%% of the CPUs")
    p.add_argument("--data-dir", default=None, help=f"Fashion-MNIST IDX files (default {fashion_mnist_np.DEFAULT_DIR})")
    p.add_argument("--epochs", type=int, default=None, metavar="N",
                   help="instead: N whole epochs of `duet train` against a plain PyTorch loop (bench/cpu/epochs.py)")
    args = p.parse_args()
    args.models = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in args.models if m not in WORKLOADS]
    if unknown:
        p.error(f"unknown model(s) {', '.join(unknown)}: expected some of {', '.join(WORKLOADS)}")
    if args.repeats < 1 or args.max_torch_threads < 1 or args.scale <= 0 or args.retries < 0:
        p.error("--repeats and --max-torch-threads must be at least 1, --scale positive, --retries >= 0")
    if args.epochs is not None and (args.epochs < 1 or args.strategies or args.scale != 1.0):
        p.error("--epochs must be at least 1, and it trains whole epochs of duet train alone: "
                "without --strategies or --scale")
    return args


def programs(build_dir, needed):
    """The built programs, or a BenchError saying how to build those `needed` that are missing."""
    paths = {"duet_bench": os.path.join(build_dir, "bench", "duet_bench"),
             "gemm_peak": os.path.join(build_dir, "bench", "gemm_peak"),
             "duet": os.path.join(build_dir, "apps", "duet"),
             "core_latency": os.path.join(build_dir, "bench", "core_latency")}
    for name in needed:
        if not os.access(paths[name], os.X_OK):
            raise BenchError(f"{paths[name]} is missing: run `make bench`, or cmake --build {build_dir} "
                             f"--target {TARGETS[name]}")
    return paths


def check_torch():
    """PyTorch must import in the interpreter that runs torch_bench.py."""
    done = subprocess.run([sys.executable, "-c", "import torch, numpy"], capture_output=True, text=True)
    if done.returncode != 0:
        raise BenchError(f"{sys.executable} cannot import torch and numpy: run bench/cpu/setup.sh (it installs "
                         f"Debian's python3-torch and python3-numpy)\n{done.stderr.strip()}")


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def measure_gemm_peak(paths, retries):
    progress("sgemm peak: OpenBLAS on 1 thread, then one 1-thread GEMM per core concurrently")
    peak = run_undisturbed([paths["gemm_peak"]], "gemm_peak", retries)
    progress(f"sgemm peak {peak['single_thread_gflops']:.1f} GFLOP/s on 1 thread, "
             f"{peak['concurrent_gflops']:.1f} for {peak['concurrent_threads']} concurrent")
    return peak


def best_peak(samples):
    """The highest of each figure over the measurements: a peak is a best case."""
    best = {key: value for key, value in samples[0].items() if key != "other_cpu_load"}
    for key in ("single_thread_gflops", "concurrent_gflops"):
        best[key] = max(s[key] for s in samples)
    best["samples"] = samples
    return best


def measure_model(model, args, paths, torch_threads):
    """Alternates duet, PyTorch at each thread count (and duet compare) for --repeats rounds."""
    warmup, timed = WORKLOADS[model]
    timed = max(1, round(timed * args.scale))
    common = ["--model", model, "--batches", str(timed), "--warmup", str(warmup), "--batch-size", str(BATCH_SIZE),
              "--lr", str(LR)] + (["--data-dir", args.data_dir] if args.data_dir else [])
    duet_runs, torch_runs, strategy_runs = [], {t: [] for t in torch_threads}, []
    for round_ in range(1, args.repeats + 1):
        tag = f"{model} round {round_}/{args.repeats}"
        progress(f"{tag}: duet ({timed} batches after {warmup} warm-up)")
        duet_runs.append(run_undisturbed([paths["duet_bench"], *common], f"duet_bench {model}", args.retries))
        progress(f"{tag}: duet {duet_runs[-1]['train_images_per_second']:,.0f} img/s on {duet_runs[-1]['threads']} threads")
        for threads in torch_threads:
            command = [sys.executable, os.path.join(HERE, "torch_bench.py"), *common, "--threads", str(threads)]
            run = run_undisturbed(command, f"torch_bench {model} --threads {threads}", args.retries)
            torch_runs[threads].append(run)
            progress(f"{tag}: PyTorch {threads} thread(s) {run['train_images_per_second']:,.0f} img/s")
        if args.strategies:
            run = strategies.run_compare(paths["duet"], model, timed, BATCH_SIZE, args.data_dir)
            strategy_runs.append(run)
            progress(f"{tag}: duet compare " + ", ".join(f"{k} {v:,.0f}" for k, v in run.items()) + " img/s")
    return duet_runs, torch_runs, strategy_runs


def measure_batches(args, paths, torch_threads):
    """`make bench`'s own mode: (the models' summaries, the result's settings and gemm_peak)."""
    # The peak is measured before each model, spread over the run, and the best kept: a
    # neighbour busy during one measurement would otherwise lower the roofline.
    peak_samples, measured = [], {}
    for model in args.models:
        peak_samples.append(measure_gemm_peak(paths, args.retries))
        measured[model] = measure_model(model, args, paths, torch_threads)
    gemm_peak = best_peak(peak_samples)
    summaries = [summarize(model, *measured[model], gemm_peak) for model in args.models]
    settings = {"batch_size": BATCH_SIZE, "optimizer": "sgd", "lr": LR, "repeats": args.repeats,
                "torch_threads": torch_threads, "scale": args.scale,
                "workloads": {m: {"warmup": w, "batches": max(1, round(b * args.scale))}
                              for m, (w, b) in WORKLOADS.items() if m in args.models}}
    return summaries, {"settings": settings, "gemm_peak": gemm_peak}


def main():
    args = parse_args()
    data_dir = args.data_dir or fashion_mnist_np.DEFAULT_DIR
    if fashion_mnist_np.missing_files(data_dir):
        raise BenchError(fashion_mnist_np.missing_message(data_dir))
    paths = programs(args.build_dir, (["duet"] if args.epochs else ["duet_bench", "gemm_peak"]) + ["core_latency"])
    placement.probe = paths["core_latency"]
    check_torch()
    if args.strategies:
        strategies.check_compare(paths["duet"])
    torch_threads = list(range(1, args.max_torch_threads + 1))

    if args.epochs:
        summaries, details = epochs.measure(args, paths["duet"], torch_threads)
        load = neighbour_load(summaries)
        text = epochs_table(summaries, load, args.out)
    else:
        summaries, details = measure_batches(args, paths, torch_threads)
        load = neighbour_load(summaries, details["gemm_peak"]["samples"])
        text = table(summaries, details["gemm_peak"], load, args.out)

    torch_version = summaries[0]["torch"]["samples"][0]["torch_version"] if summaries else None
    result = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": {"cpu": cpu_model(), "logical_cpus": os.cpu_count()},
        "torch_version": torch_version,
        **details,
        "other_cpu_load": load,
        "models": summaries,
    }
    print(text)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
    progress(f"wrote {args.out}")


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        print(f"bench: error: {e}", file=sys.stderr)
        sys.exit(1)
