#!/usr/bin/env python3
"""bench/cpu/run.py --epochs without running it: duet train's output read back from fixed samples,
the per-run figures, the comparison and its table, and the process runner both modes share
(peak RSS, failures, timeouts, retries of disturbed runs), on tiny child processes."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "cpu"))
import epoch_runs  # noqa: E402
import processes  # noqa: E402
from placement import Placement, placement  # noqa: E402
from processes import BenchError  # noqa: E402
from summary import compare, neighbour_load  # noqa: E402
from table import epochs_table  # noqa: E402

# What `duet train --model mlp --epochs 2 --metrics FILE` prints and writes (apps/train_report.cpp).
STDOUT = """training mlp (203530 parameters) on [cpu:0]: 60000 images, batch 256, sgd lr 0.2, epochs 1..2
epoch  1  loss 0.6931  train acc 0.760  test acc 0.820  0.4 s  141392 img/s
epoch  2  loss 0.4710  train acc 0.836  test acc 0.830  0.6 s  100000 img/s
test acc 0.83, 0.5 sec/epoch on [cpu:0]
"""
METRICS = """{"batch_size":256,"devices":"[cpu:0]","epoch":1,"eval_seconds":0.04,"images_per_second":150000.0,\
"lr":0.2,"model":"mlp","optimizer":"sgd","seconds":0.4,"seed":0,"strategy":"single","test_acc":0.8195,\
"train_acc":0.7596,"train_loss":0.6930}
{"batch_size":256,"devices":"[cpu:0]","epoch":2,"eval_seconds":0.06,"images_per_second":100000.0,\
"lr":0.2,"model":"mlp","optimizer":"sgd","seconds":0.6,"seed":0,"strategy":"single","test_acc":0.8301,\
"train_acc":0.8360,"train_loss":0.4710}
"""
INFO = "duet 0.1.0\nCUDA backend: built\nCUDA devices: 0\nCPU threads:  2 (hardware 2)\n"


def run_sample(train_ips, eval_ips, accuracy, rss, threads, load=0.0):
    return {"train_images_per_second": train_ips, "eval_images_per_second": eval_ips, "test_accuracy": accuracy,
            "peak_rss_mib": rss, "threads": threads, "other_cpu_load": load}


class DuetTrainOutputTest(unittest.TestCase):
    def test_header_and_metrics_give_the_run(self):
        run = epoch_runs.parse_duet_train(STDOUT, METRICS)
        self.assertEqual((run["model"], run["parameters"], run["train_images"], run["batch_size"]),
                         ("mlp", 203530, 60000, 256))
        self.assertEqual((run["optimizer"], run["lr"]), ("sgd", 0.2))
        self.assertEqual([e["epoch"] for e in run["epochs"]], [1, 2])
        self.assertEqual(run["epochs"][1]["eval_seconds"], 0.06)
        self.assertNotIn("devices", run["epochs"][0])  # the settings are the run's, not each epoch's

    def test_figures_are_over_all_epochs(self):
        run = epoch_runs.sample(epoch_runs.parse_duet_train(STDOUT, METRICS), 10000,
                                {"peak_rss_mib": 250.0, "other_cpu_load": 0.01})
        self.assertAlmostEqual(run["train_images_per_second"], 2 * 60000 / 1.0)
        self.assertAlmostEqual(run["eval_images_per_second"], 2 * 10000 / 0.1)
        self.assertEqual(run["test_accuracy"], 0.8301)  # the last epoch's
        self.assertEqual((run["peak_rss_mib"], run["other_cpu_load"], run["test_images"]), (250.0, 0.01, 10000))

    def test_metrics_without_eval_seconds_are_refused(self):
        old = "\n".join(line.replace('"eval_seconds":0.04,', "") for line in METRICS.splitlines())
        with self.assertRaisesRegex(BenchError, "eval_seconds"):
            epoch_runs.parse_duet_train(STDOUT, old)
        with self.assertRaisesRegex(BenchError, "everything"):
            epoch_runs.parse_duet_train(STDOUT, "")

    def test_output_without_the_header_is_refused(self):
        with self.assertRaisesRegex(BenchError, "parameters"):
            epoch_runs.parse_duet_train(STDOUT.split("\n", 1)[1], METRICS)

    def test_threads_from_duet_info(self):
        self.assertEqual(epoch_runs.THREADS.search(INFO).group(1), "2")


class ComparisonTest(unittest.TestCase):
    def summary(self):
        duet = [run_sample(140000, 270000, 0.82, 250, 2), run_sample(150000, 290000, 0.82, 252, 2, load=0.2),
                run_sample(160000, 280000, 0.82, 251, 2)]
        torch = {1: [run_sample(100000, 200000, 0.81, 320, 1)] * 3, 2: [run_sample(50000, 210000, 0.80, 330, 2)] * 3}
        return {"model": "mlp", "epochs": 2, "batch_size": 256, "lr": 0.2, "train_images": 60000,
                "test_images": 10000, **compare(duet, torch)}

    def test_medians_best_threads_and_ratios(self):
        s = self.summary()
        self.assertEqual(s["duet"]["train_images_per_second"], 150000)
        self.assertEqual(s["torch_best_threads"], 1)  # by training img/s, though 2 threads evaluate faster
        self.assertAlmostEqual(s["train_ratio_duet_over_torch"], 1.5)
        self.assertAlmostEqual(s["eval_ratio_duet_over_torch"], 1.4)
        self.assertEqual(neighbour_load([s]), {"max": 0.2, "disturbed_runs": 1, "runs": 9, "apart_runs": 0})

    def test_table_row(self):
        text = epochs_table([self.summary()], {"max": 0.2, "disturbed_runs": 1, "runs": 9}, "out.json")
        lines = text.splitlines()
        self.assertEqual(len(lines[0].split("|")), len(lines[1].split("|")))
        self.assertEqual(lines[2], "| mlp | 2 | 150,000 | 100,000 (1) | 1.50 | 280,000 | 200,000 | 1.40 | 0.820 | "
                                   "0.810 | 251 | 320 |")
        self.assertIn("SGD with the model's lr: mlp 0.2", text)
        self.assertIn("Medians of 3 alternating runs", text)


class ProcessTest(unittest.TestCase):
    def test_stdout_and_peak_rss_of_the_child(self):
        code = "x = bytearray(64 << 20); print('{\"ok\": 1}')"  # 64 MiB, touched
        stdout, figures = processes.run_process([sys.executable, "-c", code], "child")
        self.assertEqual(processes.last_json_line(stdout, "child"), {"ok": 1})
        self.assertGreater(figures["peak_rss_mib"], 64)
        self.assertGreaterEqual(figures.get("other_cpu_load", 0.0), 0.0)

    def test_failure_and_timeout(self):
        with self.assertRaisesRegex(BenchError, "exit 3"):
            processes.run_process([sys.executable, "-c", "import sys; sys.exit(3)"], "child")
        with self.assertRaisesRegex(BenchError, "still running"):
            processes.run_process([sys.executable, "-c", "import time; time.sleep(30)"], "child", timeout=0.5)
        with self.assertRaisesRegex(BenchError, "cannot run"):
            processes.run_process(["/nonexistent/program"], "child")

    def test_a_disturbed_run_is_run_again(self):
        loads = iter([0.5, 0.02])
        calls = []

        def run(command, what):
            calls.append(command)
            return {"other_cpu_load": next(loads)}

        best = processes.run_undisturbed(["x"], "x", retries=3, wait_seconds=0, run=run)
        self.assertEqual((best["other_cpu_load"], len(calls)), (0.02, 2))

    def test_a_run_on_cores_placed_apart_is_run_again(self):
        # The fastest trip seen is 27 ns; 170 is over twice that, 50 is not.
        trips = iter([170.0, 175.0, 50.0])
        calls = []

        def run(command, what):
            calls.append(command)
            return {"other_cpu_load": 0.0, "cross_core_ns": next(trips)}

        saved = placement.fastest
        placement.fastest = 27.0
        try:
            best = processes.run_undisturbed(["x"], "x", retries=3, wait_seconds=0, run=run)
            self.assertEqual((best["cross_core_ns"], len(calls)), (50.0, 3))
            trips = iter([170.0, 165.0])  # never near: the least disturbed attempt is kept
            calls.clear()
            best = processes.run_undisturbed(["x"], "x", retries=1, wait_seconds=0, run=run)
            self.assertEqual((best["cross_core_ns"], len(calls)), (170.0, 2))
            self.assertEqual(neighbour_load([], [best])["apart_runs"], 1)
        finally:
            placement.fastest = saved

    def test_the_probe_measures_and_remembers_the_fastest_trip(self):
        self.assertIsNone(Placement().cross_core_ns())  # no probe, no figure
        self.assertIsNone(Placement("/nonexistent/core_latency").cross_core_ns())
        with tempfile.TemporaryDirectory() as folder:
            trips = os.path.join(folder, "trips")
            with open(trips, "w") as f:
                f.write("40.5\n30.5\n90.0\n")
            probe = os.path.join(folder, "core_latency")
            with open(probe, "w") as f:  # prints the next trip of the file at each call
                f.write(f"#!{sys.executable}\nlines = open({trips!r}).read().split()\n"
                        f"open({trips!r}, 'w').write(' '.join(lines[1:]))\n"
                        f"print('{{\"cross_core_ns\": ' + lines[0] + '}}')\n")
            os.chmod(probe, 0o755)
            placed = Placement(probe)
            self.assertFalse(placed.is_far(100.0))  # nothing measured yet
            self.assertEqual([placed.cross_core_ns() for _ in range(3)], [40.5, 30.5, 90.0])
            self.assertEqual(placed.fastest, 30.5)
            self.assertTrue(placed.is_far(90.0))
            self.assertFalse(placed.is_far(60.0))

if __name__ == "__main__":
    unittest.main()
