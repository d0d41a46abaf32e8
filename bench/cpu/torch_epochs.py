#!/usr/bin/python3
"""PyTorch's side of `bench/cpu/run.py --epochs N`: a plain training loop over whole epochs of
Fashion-MNIST, as `duet train` runs them (the twin model and init, batches shuffled each epoch,
plain SGD, the test set evaluated after every epoch). Each epoch's training passes and its
evaluation are timed apart, without start-up and data loading. Prints one JSON line.

Run with Debian's python3-torch:  /usr/bin/python3 bench/cpu/torch_epochs.py --model mlp --epochs 1 --lr 0.2
"""
import json
import sys
import time

import torch_setup


def parse_args():
    p = torch_setup.parser(__doc__)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--lr", type=float, required=True, help="duet train's lr for the model (its header says which)")
    return p.parse_args()


args = parse_args()
torch = torch_setup.start_torch(args.threads)

import torch_loop  # noqa: E402


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
    setup = torch_loop.data_and_model(args, "torch_epochs")
    if setup is None:
        return 2
    train_x, train_y, test_x, test_y, net, optimizer = setup
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
