#!/usr/bin/python3
"""Writes PyTorch references for duet's golden tests (tests/cpu/test_golden.cpp):

  tests/golden/lenet.safetensors        d2l's LeNet, plain cross-entropy, 5 SGD steps
  tests/golden/options_cnn.safetensors  a small CNN with a grouped convolution, a dilated one,
                                        ceil-mode max and average pooling, label-smoothed
                                        cross-entropy and 5 Adam steps

Each holds the model's initial weights, one input batch and its labels, the logits, the loss,
every parameter's gradient, the losses of the training steps on that batch, and the weights
after them; the metadata names the loss's and the optimizer's settings. duet must agree within
1e-5 relative. The files are committed, so the tests need no PyTorch.

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
BATCH, STEPS, SEED = 8, 5, 0


def lenet():
    """d2l's LeNet-5 for 28x28 Fashion-MNIST (sigmoid activations, average pooling)."""
    net = nn.Sequential(
        nn.Conv2d(1, 6, kernel_size=5, padding=2), nn.Sigmoid(), nn.AvgPool2d(2, 2),
        nn.Conv2d(6, 16, kernel_size=5), nn.Sigmoid(), nn.AvgPool2d(2, 2), nn.Flatten(),
        nn.Linear(400, 120), nn.Sigmoid(), nn.Linear(120, 84), nn.Sigmoid(), nn.Linear(84, 10))
    for m in net:
        if isinstance(m, (nn.Linear, nn.Conv2d)):
            nn.init.xavier_uniform_(m.weight)
    return net


def options_cnn():
    """12x12 inputs, so that both ceil-mode poolings keep a window floor mode would drop
    (12 -> 6 where floor gives 5, 6 -> 3 where floor gives 2). tests/cpu/test_golden.cpp builds
    the same layers in duet."""
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(),
        nn.Conv2d(4, 8, 3, padding=1, groups=2), nn.ReLU(),        # grouped
        nn.MaxPool2d(3, stride=2, ceil_mode=True),                  # [8, 6, 6]
        nn.Conv2d(8, 8, 3, padding=2, dilation=2), nn.ReLU(),       # dilated
        nn.AvgPool2d(3, stride=2, ceil_mode=True),                  # [8, 3, 3]
        nn.Flatten(), nn.Linear(72, 10))


def record(name, make_net, image, loss_fn, make_optimizer, metadata):
    torch.manual_seed(SEED)
    net = make_net()
    x = torch.rand(BATCH, *image)
    y = torch.randint(0, 10, (BATCH,))
    out = {f"param.{k}": v.detach().numpy().copy() for k, v in net.state_dict().items()}
    out["input"] = x.numpy()
    out["target"] = y.numpy().astype(np.int64)

    logits = net(x)
    loss = loss_fn(logits, y)
    loss.backward()
    out["logits"] = logits.detach().numpy()
    out["loss"] = np.array(loss.item(), dtype=np.float32)
    for k, p in net.named_parameters():
        out[f"grad.{k}"] = p.grad.numpy().copy()

    opt = make_optimizer(net.parameters())
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        step_loss = loss_fn(net(x), y)
        step_loss.backward()
        opt.step()
        losses.append(step_loss.item())
    out["step_losses"] = np.array(losses, dtype=np.float32)
    out.update({f"final.{k}": v.detach().numpy().copy() for k, v in net.state_dict().items()})

    path = os.path.join(os.path.dirname(__file__), "..", "tests", "golden", f"{name}.safetensors")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    safetensors_np.save(path, out, {"format": "duet-golden", "version": FORMAT_VERSION, "model": name,
                                    "torch": torch.__version__, **metadata, "steps": str(STEPS)})
    print(f"wrote {os.path.normpath(path)}: loss {loss.item():.6f}, step losses {losses}")


def main():
    torch.set_num_threads(1)
    lr = 0.1
    record("lenet", lenet, (1, 28, 28), nn.CrossEntropyLoss(), lambda ps: torch.optim.SGD(ps, lr=lr),
           {"lr": str(lr)})
    smoothing, adam_lr = 0.1, 0.01
    record("options_cnn", options_cnn, (1, 12, 12), nn.CrossEntropyLoss(label_smoothing=smoothing),
           lambda ps: torch.optim.Adam(ps, lr=adam_lr), {"lr": str(adam_lr), "label_smoothing": str(smoothing)})


if __name__ == "__main__":
    main()
