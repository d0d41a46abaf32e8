#!/usr/bin/python3
"""Writes tests/golden/lenet.safetensors: a PyTorch reference for duet's LeNet.

It holds the d2l LeNet's initial weights, one input batch and its labels, the logits, the mean
cross-entropy loss, every parameter's gradient, the losses of 5 plain SGD steps on that batch,
and the weights after them. duet's golden test (tests/cpu/test_golden.cpp) loads it and must
agree within 1e-5 relative. The file is committed, so the tests need no PyTorch.

Run with Debian's python3-torch:  /usr/bin/python3 tools/make_golden.py
"""
import os
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np  # noqa: E402

FORMAT_VERSION = "1"
BATCH, STEPS, LR, SEED = 8, 5, 0.1, 0


def lenet():
    """d2l's LeNet-5 for 28x28 Fashion-MNIST (sigmoid activations, average pooling)."""
    return nn.Sequential(
        nn.Conv2d(1, 6, kernel_size=5, padding=2), nn.Sigmoid(), nn.AvgPool2d(2, 2),
        nn.Conv2d(6, 16, kernel_size=5), nn.Sigmoid(), nn.AvgPool2d(2, 2), nn.Flatten(),
        nn.Linear(400, 120), nn.Sigmoid(), nn.Linear(120, 84), nn.Sigmoid(), nn.Linear(84, 10))


def main():
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    net = lenet()
    for m in net:
        if isinstance(m, (nn.Linear, nn.Conv2d)):
            nn.init.xavier_uniform_(m.weight)
    x = torch.rand(BATCH, 1, 28, 28)
    y = torch.randint(0, 10, (BATCH,))
    out = {f"param.{k}": v.detach().numpy().copy() for k, v in net.state_dict().items()}
    out["input"] = x.numpy()
    out["target"] = y.numpy().astype(np.int64)

    loss_fn = nn.CrossEntropyLoss()
    logits = net(x)
    loss = loss_fn(logits, y)
    loss.backward()
    out["logits"] = logits.detach().numpy()
    out["loss"] = np.array(loss.item(), dtype=np.float32)
    for k, p in net.named_parameters():
        out[f"grad.{k}"] = p.grad.numpy().copy()

    opt = torch.optim.SGD(net.parameters(), lr=LR)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        step_loss = loss_fn(net(x), y)
        step_loss.backward()
        opt.step()
        losses.append(step_loss.item())
    out["step_losses"] = np.array(losses, dtype=np.float32)
    out.update({f"final.{k}": v.detach().numpy().copy() for k, v in net.state_dict().items()})

    path = os.path.join(os.path.dirname(__file__), "..", "tests", "golden", "lenet.safetensors")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    safetensors_np.save(path, out, {"format": "duet-golden", "version": FORMAT_VERSION, "model": "lenet",
                                    "torch": torch.__version__, "lr": str(LR), "steps": str(STEPS)})
    print(f"wrote {os.path.normpath(path)}: loss {loss.item():.6f}, step losses {losses}")


if __name__ == "__main__":
    main()
