#!/usr/bin/env python3
"""PyTorch's side of bench/overhead/overhead.py, the twin of bench/overhead/overhead_bench.cpp: microseconds per
iteration of six ops forward on 8-element tensors and their backward (median of --runs timings).
Prints one JSON line."""
import argparse
import json
import statistics
import time

import torch


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--iterations", type=int, default=2000)
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args()
    device = torch.device(args.device)
    torch.manual_seed(0)
    w = torch.randn(8).to(device).requires_grad_()
    x = torch.randn(8).to(device)
    us = []
    for run in range(args.runs + 1):  # run 0 warms up
        start = time.perf_counter()
        for _ in range(args.iterations):
            loss = torch.sigmoid(torch.relu(x * w + x) * 2.0).sum()
            loss.backward()
            w.grad = None
        loss.item()  # waits for a GPU's queued work
        if run > 0:
            us.append((time.perf_counter() - start) / args.iterations * 1e6)
    print(json.dumps({"framework": "torch", "torch_version": torch.__version__, "device": args.device,
                      "us_per_iteration": statistics.median(us)}), flush=True)


if __name__ == "__main__":
    main()
