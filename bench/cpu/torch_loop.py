"""The PyTorch training loop's pieces that bench/cpu/torch_bench.py and bench/cpu/torch_epochs.py share:
the data as tensors with the seeded twin model, shuffled batches, duet's training step, and the timed
evaluation. Import it after torch_setup.start_torch, so nothing runs in parallel before the thread
count is set."""
import sys
import time

import torch
from torch.nn import functional as F

import fashion_mnist_np
import torch_models


def load(data_dir):
    """(train images, train labels, test images, test labels) as tensors: u8 [N, 1, 28, 28], i64 [N]."""
    train = (torch.from_numpy(a.copy()) for a in fashion_mnist_np.load("train", data_dir))
    test = (torch.from_numpy(a.copy()) for a in fashion_mnist_np.load("test", data_dir))
    return (*train, *test)


def data_and_model(args, program):
    """The data set (as load()) and the seeded twin model with plain SGD at args.lr, or None
    after printing why the data could not be read."""
    try:
        data = load(args.data_dir or fashion_mnist_np.DEFAULT_DIR)
    except (OSError, ValueError) as e:
        print(f"{program}: error: {e}", file=sys.stderr)
        return None
    torch.manual_seed(args.seed)
    net = torch_models.make(args.model)
    return (*data, net, torch.optim.SGD(net.parameters(), lr=args.lr))


def to_input(images_u8):
    """u8 -> f32 in [0, 1], as duet's DataLoader does (x * (1/255))."""
    return images_u8.to(torch.float32).mul_(1.0 / 255.0)


def epoch_batches(images, labels, batch_size, generator):
    """One epoch of shuffled batches, the last, short one included, as duet's loader."""
    order = torch.randperm(labels.numel(), generator=generator)
    for first in range(0, labels.numel(), batch_size):
        index = order[first:first + batch_size]
        yield to_input(images[index]), labels[index]


def shuffled_batches(images, labels, batch_size, generator):
    """Endless shuffled batches, epoch after epoch."""
    while True:
        yield from epoch_batches(images, labels, batch_size, generator)


def train_step(net, optimizer, x, y):
    """What duet's SingleDevice::train_step does: step, then read the loss and the hits."""
    optimizer.zero_grad(set_to_none=True)  # duet drops the gradients too
    logits = net(x)
    loss = F.cross_entropy(logits, y)
    loss.backward()
    optimizer.step()
    return loss.item(), (logits.argmax(1) == y).sum().item()


def time_evaluation(net, images, labels, batch_size):
    """(seconds, accuracy) of one no-grad pass over images in eval mode, in batches."""
    net.eval()
    correct = 0
    start = time.perf_counter()
    with torch.no_grad():
        for first in range(0, labels.numel(), batch_size):
            x = to_input(images[first:first + batch_size])
            correct += (net(x).argmax(1) == labels[first:first + batch_size]).sum().item()
    seconds = time.perf_counter() - start
    net.train()
    return seconds, correct / labels.numel()
