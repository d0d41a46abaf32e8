#!/usr/bin/env python3
"""bench/gpu/gpu.sh's table: duet's GPU training throughput next to PyTorch's, eager and compiled,
from the JSON lines the runs left in a folder (<run>-<model>.json; a missing or empty file is a
run that failed or was skipped, and its log says which). The ratios compare like with like:
duet and the PyTorch columns they are divided by choose convolution algorithms the same way
(cuDNN's heuristics, deterministic ones only); the cudnn.benchmark column, PyTorch timing every
algorithm, shows what that choice costs."""
import json
import os
import sys

MODELS = ["lenet", "lenet-relu", "resnet18"]
RUNS = ["duet", "duet-graph", "eager", "compile", "eager-benchmark"]  # the files' prefixes


def load(folder, mode, model):
    path = os.path.join(folder, f"{mode}-{model}.json")
    try:
        with open(path) as f:
            lines = [line for line in f.read().splitlines() if line.startswith("{")]
        return json.loads(lines[-1]) if lines else None
    except (OSError, ValueError):
        return None


def main(folder):
    results = {(mode, model): load(folder, mode, model) for mode in RUNS for model in MODELS}

    def rate(mode, model):
        r = results[(mode, model)]
        return r["train_images_per_second"] if r else None

    def cell(x):
        return f"{x:,.0f}" if x is not None else "failed/skipped"

    def ratio(a, b):
        return f"{a / b:.2f}" if a is not None and b else "-"

    header = ["model", "duet img/s", "duet graph img/s", "PyTorch eager img/s", "PyTorch compile img/s",
              "PyTorch eager cudnn.benchmark img/s", "duet/eager", "duet graph/eager", "duet graph/compile"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for model in MODELS:
        d, g = rate("duet", model), rate("duet-graph", model)
        e, c, b = rate("eager", model), rate("compile", model), rate("eager-benchmark", model)
        lines.append("| " + " | ".join([model, cell(d), cell(g), cell(e), cell(c), cell(b), ratio(d, e), ratio(g, e),
                                        ratio(g, c)]) + " |")
    sources = sorted({r["data"] for r in results.values() if r})
    any_run = next((r for r in results.values() if r), None)
    torch_run = next((r for r in results.values() if r and r["framework"] == "torch"), None)
    lines.append("")
    lines.append("duet graph: the step recorded once as a CUDA graph and replayed (--cuda-graph).")
    lines.append("Convolutions: duet, PyTorch eager and PyTorch compile take cuDNN's heuristic choice among "
                 "deterministic algorithms (PyTorch: cudnn.benchmark = False, cudnn.deterministic = True); "
                 "the cudnn.benchmark column lets PyTorch time every algorithm, non-deterministic ones included.")
    for (mode, model), r in results.items():
        if r and r.get("framework") == "duet" and (r.get("conv") == "im2col" or r.get("batch_norm") == "duet"):
            lines.append(f"Note: duet's {mode} run of {model} ran convolutions through {r.get('conv')} and batch "
                         f"norm through {r.get('batch_norm')} (cuDNN's could not be recorded in a CUDA graph).")
    for (mode, model), r in results.items():
        if r and r.get("cudnn_declined"):
            lines.append(f"Note: in duet's {mode} run of {model}, cuDNN declined {r['cudnn_declined']} calls, "
                         "which ran on duet's slower fallback kernels instead.")
    if any_run:
        lines.append(f"Training throughput on {any_run['device']}, batch {any_run['batch_size']}, SGD, TF32 "
                     f"{'on' if any_run['tf32'] else 'off'}; median of timed windows after warm-up. "
                     f"Data: {', '.join(sources)}."
                     + (f" PyTorch {torch_run['torch_version']}." if torch_run else ""))
    else:
        lines.append("No run succeeded; see the logs.")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1])
