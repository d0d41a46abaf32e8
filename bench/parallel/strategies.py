"""`make bench ARGS=--strategies`: duet's three strategies (single, dp, ddp) on 2 logical CPU
devices, through `duet compare` (apps/), which writes DIR/results.json."""
import json
import os
import subprocess
import tempfile

from processes import BenchError

STRATEGIES = ("single", "dp", "ddp")
DEVICES = 2


def check_compare(duet):
    """Fails with a clear message unless `duet` exists and has the compare subcommand."""
    if not os.access(duet, os.X_OK):
        raise BenchError(f"--strategies needs {duet}; build it with cmake --build BUILD_DIR --target duet_cli")
    # Without the subcommand, CLI11 prints the top-level help and still exits 0, so look for
    # compare's own option in what it prints.
    done = subprocess.run([duet, "compare", "--help"], capture_output=True, text=True)
    if done.returncode != 0 or "--strategies" not in done.stdout:
        raise BenchError(f"--strategies needs `duet compare`, and {duet} has no compare subcommand "
                         f"(it lands with the data-parallel strategies); run `make bench` without --strategies")


def _images_per_second(results):
    """{strategy: img/s}; where a strategy ran on several device counts, the DEVICES one."""
    chosen = {}
    for r in results:
        if r["strategy"] in STRATEGIES and (r["strategy"] not in chosen or int(r["devices"]) == DEVICES):
            chosen[r["strategy"]] = float(r["images_per_second"])
    missing = [name for name in STRATEGIES if name not in chosen]
    if missing:
        raise KeyError(f"no result for {', '.join(missing)}")
    return chosen


def run_compare(duet, model, steps, batch_size, data_dir):
    """{strategy: images_per_second} for one `duet compare` run."""
    with tempfile.TemporaryDirectory(prefix="duet-bench-compare-") as out:
        command = [duet, "compare", "--model", model, "--devices", str(DEVICES), "--batch-size", str(batch_size),
                   "--steps", str(steps), "--strategies", ",".join(STRATEGIES), "--out", out,
                   "--no-check", "--no-plots"]  # throughput only: the per-step check would double the run
        if data_dir:
            command += ["--data-dir", data_dir]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise BenchError(f"duet compare failed (exit {done.returncode}): {' '.join(command)}\n{done.stderr.strip()}")
        path = os.path.join(out, "results.json")
        try:
            with open(path) as f:
                results = json.load(f)["results"]
            return _images_per_second(results)
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise BenchError(f"duet compare wrote no usable {path} (expected a list `results` of objects with "
                             f"strategy, devices, images_per_second): {e}") from e
