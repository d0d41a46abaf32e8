"""PyTorch twins of duet's bundled models (nn/models/models.cpp), layer for layer, with the
same init scheme, and the same FLOP count as bench/flop_count.cpp."""
import torch
from torch import nn


def mlp():
    """784-256-10 with ReLU."""
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))


def lenet():
    """d2l's LeNet-5: sigmoid activations, average pooling."""
    return nn.Sequential(
        nn.Conv2d(1, 6, kernel_size=5, padding=2), nn.Sigmoid(), nn.AvgPool2d(2),
        nn.Conv2d(6, 16, kernel_size=5), nn.Sigmoid(), nn.AvgPool2d(2), nn.Flatten(),
        nn.Linear(400, 120), nn.Sigmoid(), nn.Linear(120, 84), nn.Sigmoid(), nn.Linear(84, 10))


def lenet_relu():
    """d2l's multi-GPU from-scratch LeNet."""
    return nn.Sequential(
        nn.Conv2d(1, 20, kernel_size=3), nn.ReLU(), nn.AvgPool2d(2),
        nn.Conv2d(20, 50, kernel_size=5), nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(),
        nn.Linear(800, 128), nn.ReLU(), nn.Linear(128, 10))


BUILDERS = {"mlp": mlp, "lenet": lenet, "lenet-relu": lenet_relu}


def make(name):
    """The model, initialised as duet's: Xavier-uniform weights, PyTorch's default biases
    (U(-1/sqrt(fan_in), 1/sqrt(fan_in)), which is also duet's default)."""
    net = BUILDERS[name]()
    for layer in net:
        if isinstance(layer, (nn.Linear, nn.Conv2d)):
            nn.init.xavier_uniform_(layer.weight)
    return net


def count_flops(net):
    """(forward, backward) FLOPs per image, counted as bench/cpu/flop_count.cpp does: 2*M*N*K per
    Linear or Conv2d, the backward twice that, less the first layer's input gradient."""
    forward = backward = 0
    x = torch.zeros(1, 1, 28, 28)
    with torch.no_grad():
        for layer in net:
            x = layer(x)
            if not isinstance(layer, (nn.Linear, nn.Conv2d)):
                continue
            k = layer.weight.numel() // layer.weight.shape[0]
            gemm = 2 * x.numel() * k
            backward += gemm if forward == 0 else 2 * gemm
            forward += gemm
    return forward, backward
