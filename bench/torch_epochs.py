#!/usr/bin/python3
"""PyTorch's side of `bench/run.py --epochs N`: a plain training loop over whole epochs of
Fashion-MNIST, as `duet train` runs them (the twin model and init, batches shuffled each epoch,
plain SGD, the test set evaluated after every epoch). Each epoch's training passes and its
evaluation are timed apart, without start-up and data loading. Prints one JSON line.

Run with Debian's python3-torch:  /usr/bin/python3 bench/torch_epochs.py --model mlp --epochs 1 --lr 0.2
"""
import argparse
import json
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="lenet", choices=["mlp", "lenet", "lenet-relu"])
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--lr", type=float, required=True, help="duet train's lr for the model (its header says which)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data-dir", default=None)
    return p.parse_args()


args = parse_args()
import torch  # noqa: E402  (threads are set before anything runs in parallel)

torch.set_num_threads(args.threads)
torch.set_num_interop_threads(1)

import fashion_mnist_np  # noqa: E402
import torch_loop  # noqa: E402
import torch_models  # noqa: E402


def train_epoch(net, optimizer, batches):
    """One pass over the training set, timed from its shuffle to its last step, as duet's
    Trainer times an epoch; the same numbers as duet train's --metrics lines."""
    loss_sum = correct = images = 0
    start = time.perf_counter()
    for x, y in batches:
        loss, hits = torch_loop.train_step(net, optimizer, x, y)
        loss_sum += loss * y.numel()
        correct += hits
        images += y.numel()
    seconds = time.perf_counter() - start
    return {"train_loss": loss_sum / images, "train_acc": correct / images, "seconds": seconds,
            "images_per_second": images / seconds}


def main():
    data_dir = args.data_dir or fashion_mnist_np.DEFAULT_DIR
    try:
        train_x, train_y, test_x, test_y = torch_loop.load(data_dir)
    except (OSError, ValueError) as e:
        print(f"torch_epochs: error: {e}", file=sys.stderr)
        return 2
    torch.manual_seed(args.seed)
    net = torch_models.make(args.model)
    optimizer = torch.optim.SGD(net.parameters(), lr=args.lr)
    generator = torch.Generator().manual_seed(args.seed)
    epochs = []
    for epoch in range(1, args.epochs + 1):
        batches = torch_loop.epoch_batches(train_x, train_y, args.batch_size, generator)
        stats = train_epoch(net, optimizer, batches)
        eval_seconds, accuracy = torch_loop.time_evaluation(net, test_x, test_y, args.batch_size)
        epochs.append({"epoch": epoch, **stats, "test_acc": accuracy, "eval_seconds": eval_seconds})
        print(f"epoch {epoch}: test acc {accuracy:.3f}, {stats['seconds']:.1f} s", file=sys.stderr, flush=True)
    print(json.dumps({
        "framework": "torch", "torch_version": torch.__version__, "model": args.model,
        "threads": torch.get_num_threads(), "batch_size": args.batch_size, "lr": args.lr, "seed": args.seed,
        "parameters": sum(p.numel() for p in net.parameters()),
        "train_images": train_y.numel(), "test_images": test_y.numel(), "epochs": epochs}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
