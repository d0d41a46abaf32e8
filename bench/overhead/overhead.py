#!/usr/bin/env python3
"""The host's cost per op, duet against PyTorch eager, side by side: runs bench/overhead_bench
(duet) and bench/overhead/overhead_torch.py alternately --rounds times on one device and prints the
medians and their ratio. On a GPU this is what bounds a small model's step: its kernels take a
few microseconds, so the host's dispatch, autograd and launch cost decide."""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(command):
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads([line for line in out.splitlines() if line.startswith("{")][-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build-dir", default=os.path.join(HERE, "..", "..", "build"))
    p.add_argument("--device", default="cpu")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--python", default="/usr/bin/python3")
    args = p.parse_args()
    duet_cmd = [os.path.join(args.build_dir, "bench", "overhead_bench"), "--device", args.device]
    torch_cmd = [args.python, os.path.join(HERE, "overhead_torch.py"), "--device", args.device]
    duet_us, torch_us, version = [], [], "?"
    for _ in range(args.rounds):
        duet_us.append(run(duet_cmd)["us_per_iteration"])
        result = run(torch_cmd)
        torch_us.append(result["us_per_iteration"])
        version = result["torch_version"]
    d, t = statistics.median(duet_us), statistics.median(torch_us)
    print(f"| device | duet us/iteration | PyTorch {version} eager us/iteration | PyTorch/duet |")
    print("|---|---|---|---|")
    print(f"| {args.device} | {d:.1f} | {t:.1f} | {t / d:.1f}x |")
    print(f"\nOne iteration: 6 ops forward on 8-element tensors and their backward; medians of "
          f"{args.rounds} alternating rounds, each the median of 5 timings of 2000 iterations.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
