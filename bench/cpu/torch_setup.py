"""What bench/cpu/torch_bench.py and bench/cpu/torch_epochs.py share before torch starts: their common
command-line options, and torch imported with its thread count set before anything runs in
parallel (torch_loop.py is imported after)."""
import argparse


def parser(doc):
    """The options both scripts take; each adds its own."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--model", default="lenet", choices=["mlp", "lenet", "lenet-relu"])
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data-dir", default=None)
    return p


def start_torch(threads):
    """torch, on `threads` threads of its own and one inter-op thread."""
    import torch
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    return torch
