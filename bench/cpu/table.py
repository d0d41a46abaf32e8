"""The comparison tables bench/cpu/run.py prints, as Markdown (docs/results.md quotes them): one
for `make bench`, one for its --epochs mode."""


def _count(x):
    return f"{x:,.0f}"


def _runs_note(summaries, other_cpu_load, json_path):
    """The last line under either table: how many runs, and how disturbed."""
    return (f"Medians of {len(summaries[0]['duet']['samples']) if summaries else 0} alternating runs. Other "
            f"processes used over 10% of the CPUs during {other_cpu_load['disturbed_runs']} of the "
            f"{other_cpu_load['runs']} runs kept (at most {100 * other_cpu_load['max']:.0f}%), and the two cores "
            f"were placed apart during {other_cpu_load.get('apart_runs', 0)} (bench/cpu/placement.py); "
            f"{json_path} has each run's other_cpu_load and cross_core_ns.")


def _markdown(header, rows):
    """The table's lines: its header, the separator, a line per row."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def table(summaries, gemm_peak, other_cpu_load, json_path):
    """other_cpu_load: {"max", "disturbed_runs", "runs"} from run.py."""
    with_strategies = any("strategies" in s for s in summaries)
    header = ["model", "MFLOP/img", "duet img/s", "PyTorch img/s (torch threads)", "duet/PyTorch",
              "eval img/s duet", "eval img/s PyTorch", "RSS MiB duet", "RSS MiB PyTorch",
              "duet GFLOP/s", "duet % of peak"]
    if with_strategies:
        header += ["single img/s", "dp img/s", "ddp img/s"]
    rows = []
    for s in summaries:
        duet, torch = s["duet"], s["torch"]
        row = [s["model"], f"{s['flop_per_image'] / 1e6:.2f}", _count(duet["train_images_per_second"]),
               f"{_count(torch['train_images_per_second'])} ({s['torch_best_threads']})",
               f"{s['train_ratio_duet_over_torch']:.2f}",
               _count(duet["eval_images_per_second"]), _count(torch["eval_images_per_second"]),
               f"{duet['peak_rss_mib']:.0f}", f"{torch['peak_rss_mib']:.0f}",
               f"{duet['gflops']:.1f}", f"{100 * duet['fraction_of_peak']:.0f}%"]
        if with_strategies:
            strategies = s.get("strategies", {})
            row += [_count(strategies[k]) if k in strategies else "-" for k in ("single", "dp", "ddp")]
        rows.append(row)
    lines = _markdown(header, rows)
    duet_threads = summaries[0]["duet"]["threads"] if summaries else 0
    lines.append("")
    lines.append(f"Peak: sgemm {gemm_peak['n']}^3 through OpenBLAS, {gemm_peak['single_thread_gflops']:.1f} GFLOP/s on "
                 f"1 thread, {gemm_peak['concurrent_gflops']:.1f} GFLOP/s for {gemm_peak['concurrent_threads']} "
                 f"concurrent 1-thread GEMMs. duet ran on {duet_threads} threads; its % of peak is against "
                 f"{summaries[0]['duet']['peak_is'] if summaries else '-'}. PyTorch's threads are "
                 f"torch.set_num_threads; its GEMMs run in Debian's OpenBLAS, whose own threads use every core "
                 f"whatever that setting (docs/performance.md).")
    lines.append(_runs_note(summaries, other_cpu_load, json_path))
    return "\n".join(lines)


def epochs_table(summaries, other_cpu_load, json_path):
    """`bench/cpu/run.py --epochs N`'s table: duet train against the plain PyTorch loop (bench/cpu/epochs.py)."""
    header = ["model", "epochs", "duet train img/s", "PyTorch img/s (torch threads)", "duet/PyTorch",
              "eval img/s duet", "eval img/s PyTorch", "eval duet/PyTorch", "test acc duet", "test acc PyTorch",
              "RSS MiB duet", "RSS MiB PyTorch"]
    rows = []
    for s in summaries:
        duet, torch = s["duet"], s["torch"]
        rows.append([s["model"], str(s["epochs"]), _count(duet["train_images_per_second"]),
                     f"{_count(torch['train_images_per_second'])} ({s['torch_best_threads']})",
                     f"{s['train_ratio_duet_over_torch']:.2f}",
                     _count(duet["eval_images_per_second"]), _count(torch["eval_images_per_second"]),
                     f"{s['eval_ratio_duet_over_torch']:.2f}",
                     f"{duet['test_accuracy']:.3f}", f"{torch['test_accuracy']:.3f}",
                     f"{duet['peak_rss_mib']:.0f}", f"{torch['peak_rss_mib']:.0f}"])
    lrs = ", ".join(f"{s['model']} {s['lr']:g}" for s in summaries)
    lines = _markdown(header, rows) + [""]
    lines.append(f"img/s: the training passes over the {summaries[0]['train_images']:,} images of each epoch "
                 f"(evaluation, start-up and data loading excluded); eval: the {summaries[0]['test_images']:,} "
                 f"test images after each epoch; test acc after the last epoch. duet train ran with its defaults "
                 f"(batch {summaries[0]['batch_size']}, SGD with the model's lr: {lrs}) on "
                 f"{summaries[0]['duet']['threads']} threads; bench/cpu/torch_epochs.py with the same batch and lr "
                 f"on each PyTorch thread count (torch.set_num_threads).")
    lines.append(_runs_note(summaries, other_cpu_load, json_path))
    return "\n".join(lines)
