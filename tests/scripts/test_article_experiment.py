#!/usr/bin/env python3
"""scripts/article_experiment.py on a tiny sweep: its CSV, JSON and plot, and that it refuses to
overwrite. Usage: test_article_experiment.py DUET_BINARY"""
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile

repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
script = os.path.join(repo, "scripts", "article_experiment.py")
failures = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


with tempfile.TemporaryDirectory() as work:
    out = os.path.join(work, "article")
    run = [sys.executable, script, "--duet", sys.argv[1], "--out", out, "--steps", "1", "--warmup", "0", "--repeats", "2", "--models",
           "mlp", "--alphas", "none,100"]
    result = subprocess.run(run, capture_output=True, text=True)
    check(result.returncode == 0, f"the sweep runs: {result.stderr[-2000:]}")
    with open(os.path.join(out, "article.csv")) as f:
        rows = list(csv.DictReader(f))
    check(len(rows) == 8, f"one row per alpha and strategy: {len(rows)} rows")
    check({r["strategy"] for r in rows} == {"single", "dp", "ddp", "ddp-d2l"}, "the four strategies")
    check({r["alpha_us"] for r in rows} == {"0", "100.0"}, f"both latencies: {sorted({r['alpha_us'] for r in rows})}")
    check(all(float(r["ms_per_step"]) > 0 for r in rows), "every step time is positive")
    check(all(float(r["check_ulps"]) <= 8 for r in rows), "every strategy passed its per-step check")
    d2l = [r for r in rows if r["strategy"] == "ddp-d2l" and r["alpha_us"] == "100.0"][0]
    check(float(d2l["all_reduce_ms"]) >= 2 * 4 * 0.1, "d2l pays 2(N-1) alphas for each of mlp's 4 tensors")
    with open(os.path.join(out, "article.json")) as f:
        meta = json.load(f)["meta"]
    check(all(meta.get(k) for k in ("machine", "date", "commit", "command")), f"metadata: {sorted(meta)}")
    check(len(os.listdir(os.path.join(out, "runs"))) == 4, "one compare table per point and repeat")
    check(all(float(r["ms_min"]) <= float(r["ms_per_step"]) <= float(r["ms_max"]) and r["repeats"] == "2"
              for r in rows), "the median lies within the range of 2 repeats")
    if shutil.which("gnuplot"):
        check(os.path.getsize(os.path.join(out, "article.png")) > 0, "the plot")
    before = os.listdir(out)
    again = subprocess.run(run, capture_output=True, text=True)
    check(again.returncode != 0 and "exists" in again.stderr and os.listdir(out) == before,
          "an existing --out is refused and left as it was")

sys.exit(1 if failures else 0)
