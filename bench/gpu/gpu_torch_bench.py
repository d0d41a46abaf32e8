#!/usr/bin/env python3
"""PyTorch's side of bench/gpu/gpu.sh, the twin of bench/gpu/gpu_duet_bench.cpp: the same model, batch,
plain SGD and timing (median images/s of timed windows after a warm-up) on one CUDA device,
eager or under torch.compile. Convolutions run as duet's do by default (--cudnn deterministic:
cuDNN's heuristic choice among deterministic algorithms, no timing runs); --cudnn benchmark
lets cuDNN time every algorithm, non-deterministic ones included (PyTorch's fastest setting,
which duet does not offer). Batches are loaded as duet's DataLoader loads them: cut and
converted on a background thread into pinned memory, two ahead, then copied to the GPU without
waiting. Prints one JSON line.
"""
import argparse
import json
import os
import queue
import statistics
import sys
import threading
import time

import torch
from torch import nn
from torch.nn import functional as F

# The PyTorch twins of the models and the data loading, shared with the CPU benchmark.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cpu"))
import fashion_mnist_np  # noqa: E402
import torch_models  # noqa: E402


class Residual(nn.Module):
    """d2l's residual block, as duet's nn::Residual (nn/layers.cpp)."""

    def __init__(self, in_channels, out_channels, use_1x1_conv=False, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, padding=1, stride=stride)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.conv3 = nn.Conv2d(in_channels, out_channels, 1, stride=stride) if use_1x1_conv else None

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (self.conv3(x) if self.conv3 is not None else x))


def resnet18():
    """duet's nn::models::resnet18 (d2l's ResNet-18 for 28x28, no max-pool), PyTorch's default init."""
    def stage(cin, cout, first):
        return nn.Sequential(Residual(cin, cout) if first else Residual(cin, cout, True, 2), Residual(cout, cout))
    return nn.Sequential(nn.Conv2d(1, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
                         stage(64, 64, True), stage(64, 128, False), stage(128, 256, False), stage(256, 512, False),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 10))


def make_model(name):
    return resnet18() if name == "resnet18" else torch_models.make(name)


def load_images(data_dir, synthetic):
    """(u8 images [N, 1, 28, 28], i64 labels [N], where from) on the host."""
    if not synthetic:
        try:
            images, labels = fashion_mnist_np.load("train", data_dir)
            return torch.from_numpy(images.copy()), torch.from_numpy(labels.copy()), "fashion-mnist"
        except (OSError, ValueError) as e:
            print(f"gpu_torch_bench: {e}; using synthetic data", file=sys.stderr)
    g = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (60000, 1, 28, 28), dtype=torch.uint8, generator=g)
    return images, torch.randint(0, 10, (60000,), generator=g), "synthetic"


def batches(images, labels, batch_size, pin):
    """Endless shuffled full batches, u8 -> f32 / 255 on the host (duet's DataLoader)."""
    g = torch.Generator().manual_seed(0)
    while True:
        order = torch.randperm(labels.numel(), generator=g)
        for first in range(0, labels.numel() - batch_size + 1, batch_size):
            index = order[first:first + batch_size]
            x, y = images[index].to(torch.float32).mul_(1.0 / 255.0), labels[index]
            yield (x.pin_memory(), y.pin_memory()) if pin else (x, y)


def prefetched(items, depth=2):
    """`items` made on a background thread, `depth` ahead (torch's ops release the GIL)."""
    ready = queue.Queue(maxsize=depth)
    threading.Thread(target=lambda: [ready.put(item) for item in items], daemon=True).start()
    while True:
        yield ready.get()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="lenet", choices=["lenet", "lenet-relu", "resnet18"])
    p.add_argument("--mode", default="eager", choices=["eager", "compile"])
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--warmup", type=int, default=10, help="untimed batches first (compilation happens here)")
    p.add_argument("--windows", type=int, default=5)
    p.add_argument("--window-batches", type=int, default=20)
    p.add_argument("--tf32", action="store_true", help="TF32 for matmul and cuDNN convolution")
    p.add_argument("--cudnn", default="deterministic", choices=["deterministic", "benchmark"],
                   help="convolution algorithms: as duet chooses them, or timed by cudnn.benchmark")
    p.add_argument("--synthetic", action="store_true")
    p.add_argument("--data-dir", default=fashion_mnist_np.DEFAULT_DIR)
    args = p.parse_args()

    # PyTorch turns TF32 on for cuDNN convolutions by default; duet's default is off.
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.backends.cudnn.allow_tf32 = args.tf32
    # deterministic: cuDNN's heuristics pick among deterministic algorithms, as duet's conv2d does
    # (kernels/cuda/conv2d_cudnn.cpp); benchmark: every algorithm timed once per shape.
    torch.backends.cudnn.benchmark = args.cudnn == "benchmark"
    torch.backends.cudnn.deterministic = args.cudnn == "deterministic"
    device = torch.device(args.device)
    images, labels, source = load_images(args.data_dir, args.synthetic)
    torch.manual_seed(0)
    net = make_model(args.model).to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)

    def step(x, y):
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(net_forward(x), y)
        loss.backward()
        optimizer.step()
        return loss

    net_forward = torch.compile(net) if args.mode == "compile" else net
    data = prefetched(batches(images, labels, args.batch_size, pin=device.type == "cuda"))
    rates = []
    for _ in range(args.warmup):
        x, y = next(data)
        step(x.to(device, non_blocking=True), y.to(device, non_blocking=True)).item()
    for _ in range(args.windows):
        start = time.perf_counter()
        for _ in range(args.window_batches):
            x, y = next(data)
            step(x.to(device, non_blocking=True), y.to(device, non_blocking=True)).item()  # duet reads every loss too
        rates.append(args.window_batches * args.batch_size / (time.perf_counter() - start))
    print(json.dumps({"framework": "torch", "torch_version": torch.__version__, "mode": args.mode,
                      "model": args.model, "device": args.device, "data": source, "batch_size": args.batch_size,
                      "tf32": args.tf32, "cudnn": args.cudnn, "window_images_per_second": rates,
                      "train_images_per_second": statistics.median(rates)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
