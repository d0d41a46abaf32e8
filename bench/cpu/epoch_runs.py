"""One run of each side of `bench/cpu/run.py --epochs N`, each turned into a sample of one shape:
`duet train` (the real CLI with its defaults, read back from its header line and its --metrics
lines) and bench/cpu/torch_epochs.py (its JSON line)."""
import json
import os
import re
import subprocess
import sys
import tempfile

from processes import BenchError, last_json_line, run_process, run_undisturbed

HERE = os.path.dirname(os.path.abspath(__file__))
# The line duet train prints before its first epoch (apps/train_report.cpp).
HEADER = re.compile(r"^training (\S+) \((\d+) parameters\) on .*?: (\d+) images, batch (\d+)", re.MULTILINE)
THREADS = re.compile(r"^CPU threads:\s+(\d+)", re.MULTILINE)  # `duet info`
# What each epoch of either side reports: the names of duet train's --metrics lines.
EPOCH_KEYS = ("epoch", "train_loss", "train_acc", "test_acc", "seconds", "images_per_second", "eval_seconds")


def timeout(epochs):
    """Seconds a run may take, generously: start-up, then each epoch."""
    return 900 + 300 * epochs


def duet_threads(duet):
    """The threads duet train computes on by default, as `duet info` says."""
    done = subprocess.run([duet, "info"], capture_output=True, text=True)
    found = THREADS.search(done.stdout)
    if done.returncode != 0 or not found:
        raise BenchError(f"`{duet} info` printed no 'CPU threads:' line:\n{done.stdout}{done.stderr}")
    return int(found.group(1))


def parse_duet_train(stdout, metrics_text):
    """duet train's run from its stdout (the header line: model, parameters, training images,
    batch) and its --metrics file (one JSON object per epoch, with its settings)."""
    header = HEADER.search(stdout)
    if not header:
        raise BenchError(f"duet train printed no 'training MODEL (N parameters) on ...' line:\n{stdout}")
    try:
        lines = [json.loads(line) for line in metrics_text.splitlines() if line.strip()]
    except json.JSONDecodeError as e:
        raise BenchError(f"duet train's --metrics file is not JSON lines: {e}") from e
    missing = sorted({key for line in lines for key in EPOCH_KEYS + ("lr", "optimizer") if key not in line})
    if not lines or missing:
        raise BenchError(f"duet train's --metrics lines lack {', '.join(missing) or 'everything'} (eval_seconds "
                         f"came with the --epochs mode: rebuild duet_cli)")
    return {"framework": "duet", "model": header.group(1), "parameters": int(header.group(2)),
            "train_images": int(header.group(3)), "batch_size": int(header.group(4)),
            "optimizer": lines[0]["optimizer"], "lr": lines[0]["lr"], "seed": lines[0].get("seed"),
            "epochs": [{key: line[key] for key in EPOCH_KEYS} for line in lines]}


def sample(run, test_images, process):
    """A run with what the table compares: training img/s over all its epochs' training passes,
    evaluation img/s over all its evaluations, the last epoch's test accuracy, and the process's
    peak RSS and other_cpu_load (run_process)."""
    epochs = run["epochs"]
    return {**run, "test_images": test_images,
            "train_images_per_second": run["train_images"] * len(epochs) / sum(e["seconds"] for e in epochs),
            "eval_images_per_second": test_images * len(epochs) / sum(e["eval_seconds"] for e in epochs),
            "test_accuracy": epochs[-1]["test_acc"], **process}


def run_duet_train(duet, model, epochs, threads, test_images, data_dir, retries):
    """One `duet train --model MODEL --epochs EPOCHS` run, its other flags left at their defaults."""
    with tempfile.TemporaryDirectory(prefix="duet-bench-epochs-") as folder:
        metrics = os.path.join(folder, "metrics.jsonl")
        command = [duet, "train", "--model", model, "--epochs", str(epochs), "--metrics", metrics]
        if data_dir:
            command += ["--data-dir", data_dir]

        def run(command, what):
            stdout, process = run_process(command, what, timeout(epochs))
            with open(metrics) as f:  # duet train truncates it at each start
                return sample({**parse_duet_train(stdout, f.read()), "threads": threads}, test_images, process)

        return run_undisturbed(command, f"duet train {model}", retries, run=run)


def run_torch_epochs(model, epochs, threads, duet_run, data_dir, retries):
    """One bench/cpu/torch_epochs.py run with duet_run's batch size and lr, on `threads` threads."""
    command = [sys.executable, os.path.join(HERE, "torch_epochs.py"), "--model", model, "--epochs", str(epochs),
               "--threads", str(threads), "--batch-size", str(duet_run["batch_size"]), "--lr", str(duet_run["lr"])]
    if data_dir:
        command += ["--data-dir", data_dir]

    def run(command, what):
        stdout, process = run_process(command, what, timeout(epochs))
        result = last_json_line(stdout, what)
        return sample(result, result["test_images"], process)

    return run_undisturbed(command, f"torch_epochs {model} --threads {threads}", retries, run=run)
