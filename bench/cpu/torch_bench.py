#!/usr/bin/python3
"""PyTorch's side of `make bench`, the twin of bench/cpu/duet_bench.cpp: the same model, init,
data, batches and plain SGD, timed the same way. Prints one JSON line.

Run with Debian's python3-torch:  /usr/bin/python3 bench/cpu/torch_bench.py --model lenet --threads 1
"""
import json
import resource
import sys
import time

import torch_setup


def parse_args():
    p = torch_setup.parser(__doc__)
    p.add_argument("--batches", type=int, default=60, help="timed training batches")
    p.add_argument("--warmup", type=int, default=10, help="untimed batches first")
    p.add_argument("--lr", type=float, default=0.1)
    return p.parse_args()


args = parse_args()
torch = torch_setup.start_torch(args.threads)

import torch_loop  # noqa: E402
import torch_models  # noqa: E402


def time_training(net, optimizer, batches, warmup, timed):
    images = 0
    start = time.perf_counter()
    for step in range(warmup + timed):
        if step == warmup:
            start = time.perf_counter()
        x, y = next(batches)
        loss, _ = torch_loop.train_step(net, optimizer, x, y)
        if step >= warmup:
            images += y.numel()
    return images / (time.perf_counter() - start), loss


def main():
    setup = torch_loop.data_and_model(args, "torch_bench")
    if setup is None:
        return 2
    train_x, train_y, test_x, test_y, net, optimizer = setup
    forward, backward = torch_models.count_flops(net)
    batches = torch_loop.shuffled_batches(train_x, train_y, args.batch_size, torch.Generator().manual_seed(args.seed))

    train_ips, last_loss = time_training(net, optimizer, batches, args.warmup, args.batches)
    eval_seconds, accuracy = torch_loop.time_evaluation(net, test_x, test_y, args.batch_size)
    eval_ips = test_y.numel() / eval_seconds
    print(json.dumps({
        "framework": "torch", "torch_version": torch.__version__, "model": args.model,
        "threads": torch.get_num_threads(), "batch_size": args.batch_size, "warmup": args.warmup,
        "batches": args.batches, "train_images_per_second": train_ips, "eval_images_per_second": eval_ips,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "last_loss": last_loss, "test_accuracy": accuracy,
        "parameters": sum(p.numel() for p in net.parameters()),
        "forward_flop_per_image": forward, "flop_per_image": forward + backward}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
