"""Turns the repeated runs of one model into its row of the comparison: medians, PyTorch's best
thread count and the duet/PyTorch ratios (both modes of bench/cpu/run.py), and, in the batch mode,
duet's GFLOP/s against the measured GEMM peak."""
import statistics

from placement import placement
from processes import DISTURBED, BenchError

MEASURES = ("train_images_per_second", "eval_images_per_second", "peak_rss_mib")


def medians(samples):
    """The median of each measure over repeated runs of one configuration, with the samples."""
    row = {key: statistics.median(s[key] for s in samples) for key in MEASURES}
    row["threads"] = samples[0]["threads"]
    row["test_accuracy"] = statistics.median(s["test_accuracy"] for s in samples)
    row["samples"] = samples
    return row


def check_twins(model, duet, torch_runs, keys=("parameters", "flop_per_image")):
    """duet's model and its PyTorch twin must be the same network: same sizes, same FLOPs."""
    for key in keys:
        if torch_runs[0][key] != duet[0][key]:
            raise BenchError(f"{model}: duet has {key} {duet[0][key]}, its PyTorch twin "
                               f"{torch_runs[0][key]}; bench/cpu/torch_models.py no longer matches nn/models/")


def compare(duet_samples, torch_samples):
    """What both modes of bench/cpu/run.py show of one model: each configuration's medians, PyTorch
    at its best thread count (by median training img/s), and duet's ratios to it.
    torch_samples: {threads: [run, ...]}."""
    duet = medians(duet_samples)
    torch_by_threads = {t: medians(runs) for t, runs in torch_samples.items()}
    best_threads = max(torch_by_threads, key=lambda t: torch_by_threads[t]["train_images_per_second"])
    best = torch_by_threads[best_threads]
    return {
        "duet": duet,
        "torch_best_threads": best_threads,
        "torch": best,
        "torch_by_threads": {str(t): row for t, row in torch_by_threads.items()},
        "train_ratio_duet_over_torch": duet["train_images_per_second"] / best["train_images_per_second"],
        "eval_ratio_duet_over_torch": duet["eval_images_per_second"] / best["eval_images_per_second"],
    }


def neighbour_load(summaries, other_samples=()):
    """How much other processes and the cores' placement disturbed the kept runs (the summaries'
    and other_samples): the largest share of the CPUs other processes took during one run, how
    many runs they took over DISTURBED of them, and in how many the cores were placed apart."""
    runs = list(other_samples)
    for s in summaries:
        runs += s["duet"]["samples"]
        for row in s["torch_by_threads"].values():
            runs += row["samples"]
    loads = [r.get("other_cpu_load", 0.0) for r in runs]
    return {"max": max(loads), "disturbed_runs": sum(load > DISTURBED for load in loads), "runs": len(loads),
            "apart_runs": sum(placement.is_far(r.get("cross_core_ns")) for r in runs)}


def peak_for(threads, gemm_peak):
    """The GEMM roofline for a run on `threads` threads, and which figure it is."""
    if threads <= 1:
        return gemm_peak["single_thread_gflops"], "1-thread sgemm"
    if threads == gemm_peak["concurrent_threads"]:
        return gemm_peak["concurrent_gflops"], f"{threads} concurrent 1-thread sgemms"
    return gemm_peak["single_thread_gflops"] * threads, f"{threads} x 1-thread sgemm (not measured together)"


def summarize(model, duet_samples, torch_samples, strategy_samples, gemm_peak):
    """torch_samples: {threads: [run, ...]}; strategy_samples: [{strategy: img/s}, ...] or []."""
    check_twins(model, duet_samples, next(iter(torch_samples.values())))
    compared = compare(duet_samples, torch_samples)
    flop = duet_samples[0]["flop_per_image"]

    def roofline(row):
        gflops = row["train_images_per_second"] * flop / 1e9
        peak, peak_name = peak_for(row["threads"], gemm_peak)
        return {"gflops": gflops, "peak_gflops": peak, "peak_is": peak_name, "fraction_of_peak": gflops / peak}

    summary = {
        "model": model,
        "parameters": duet_samples[0]["parameters"],
        "flop_per_image": flop,
        "forward_flop_per_image": duet_samples[0]["forward_flop_per_image"],
        **compared,
        "duet": {**compared["duet"], **roofline(compared["duet"])},
        "torch": {**compared["torch"], **roofline(compared["torch"])},
    }
    if strategy_samples:
        names = strategy_samples[0].keys()
        summary["strategies"] = {name: statistics.median(s[name] for s in strategy_samples) for name in names}
        summary["strategy_samples"] = strategy_samples
    return summary
