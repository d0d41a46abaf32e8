#!/usr/bin/python3
"""Writes tests/golden/options.safetensors: PyTorch 1.13's values for the options duet follows.

Each case is a group of tensors under one prefix, with its options stored beside them as small
tensors, so the C++ tests (tests/cpu/test_options_golden.cpp, and tests/cuda/test_cuda_options.cpp
on a GPU) read every case from the file and list none themselves:

  ce.<case>.*      F.cross_entropy: x, target, weight (when weighted), ignore_index, label_smoothing;
                   for each reduction r in none, sum, mean: loss_<r>, and grad_<r> = d(loss . g_<r>)/dx
                   (g_none = upstream, a random tensor of the loss's shape; 1 for sum and mean).
  reduce.<case>.*  torch.amin / torch.min(dim) / torch.argmin / torch.var / torch.std: x, dims, keepdim,
                   (unbiased), out, (indices), upstream, grad.
  adam.<case>.*    torch.optim.Adam / AdamW with amsgrad=True: p0, p1 (two parameters), the gradients
                   of every step (g0.<k>, g1.<k>; p1 has none at step 2), the hyperparameters, and
                   the parameters and max_exp_avg_sq after each step.
  max.<case>.*     torch.optim.SGD / Adam / AdamW with maximize=True, ascending a concave quadratic
                   -sum(curvature * (p - target)^2) for 10 steps: p0, target, curvature, the optimizer
                   (0 sgd, 1 adam, 2 adamw) and its hyperparameters, the parameter after each step.
  bn.*             nn.BatchNorm2d(momentum=None) over several training batches: running_mean,
                   running_var and num_batches_tracked after each, and an eval forward at the end.

Everything is f64 except the batch norm (duet's layers are f32). The file is committed, so the
tests need no PyTorch. Run with Debian's python3-torch:  /usr/bin/python3 tools/make_options_golden.py
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np  # noqa: E402

FORMAT_VERSION = "1"
out = {}


def put(name, value, dtype=None):
    array = value.detach().numpy().copy() if isinstance(value, torch.Tensor) else np.array(value)
    out[name] = array.astype(dtype) if dtype else array


def cross_entropy_case(name, x, target, weight=None, ignore_index=-100, label_smoothing=0.0):
    p = f"ce.{name}."
    put(p + "x", x)
    put(p + "target", target, np.int64)
    if weight is not None:
        put(p + "weight", weight)
    put(p + "ignore_index", [ignore_index], np.int64)
    put(p + "label_smoothing", [label_smoothing], np.float64)
    for reduction in ("none", "sum", "mean"):
        xr = x.clone().requires_grad_()
        loss = F.cross_entropy(xr, target, weight=weight, ignore_index=ignore_index, reduction=reduction,
                               label_smoothing=label_smoothing)
        upstream = torch.randn(loss.shape, dtype=torch.float64) if reduction == "none" else torch.ones(())
        if reduction == "none":
            put(p + "upstream", upstream)
        loss.backward(upstream.to(loss.dtype))
        put(p + f"loss_{reduction}", loss)
        put(p + f"grad_{reduction}", xr.grad)


def cross_entropy_cases():
    x = torch.randn(6, 5, dtype=torch.float64) * 2
    t = torch.tensor([0, 4, 2, 2, 1, 3])
    t_ignored = torch.tensor([0, -100, 2, -100, 1, 3])
    w = torch.rand(5, dtype=torch.float64) * 2 + 0.2
    cross_entropy_case("plain", x, t)
    cross_entropy_case("ignored", x, t_ignored)
    cross_entropy_case("ignore_class", x, t, ignore_index=2)  # an ignore_index that is a class
    cross_entropy_case("weighted", x, t_ignored, weight=w)
    cross_entropy_case("smoothed", x, t_ignored, label_smoothing=0.15)
    cross_entropy_case("weighted_smoothed", x, t_ignored, weight=w, label_smoothing=0.3)
    cross_entropy_case("all_ignored", x, torch.full((6,), -100), weight=w, label_smoothing=0.1)
    xs = torch.randn(2, 4, 3, 2, dtype=torch.float64)
    ts = torch.randint(0, 4, (2, 3, 2))
    ts[0, 1, 0] = 7
    cross_entropy_case("spatial", xs, ts, weight=torch.rand(4, dtype=torch.float64) + 0.5, ignore_index=7,
                       label_smoothing=0.2)
    cross_entropy_case("one_sample", torch.randn(5, dtype=torch.float64), torch.tensor(3), label_smoothing=0.1)


def reduce_case(name, op, x, dims, keepdim, unbiased=None):
    p = f"reduce.{name}."
    put(p + "op", [["amin", "min", "argmin", "var", "std"].index(op)], np.int64)
    put(p + "x", x)
    put(p + "dims", list(dims), np.int64)
    put(p + "keepdim", [int(keepdim)], np.int64)
    xr = x.clone().requires_grad_()
    all_dims = len(dims) == 0
    if op == "amin":
        result = torch.amin(xr, dim=tuple(dims), keepdim=keepdim) if not all_dims else torch.min(xr)
    elif op == "min":
        result, indices = torch.min(xr, dim=dims[0], keepdim=keepdim)
        put(p + "indices", indices, np.int64)
    elif op == "argmin":
        put(p + "out", torch.argmin(x, dim=dims[0], keepdim=keepdim), np.int64)
        return
    else:
        put(p + "unbiased", [int(unbiased)], np.int64)
        fn = torch.var if op == "var" else torch.std
        result = fn(xr, dim=tuple(dims), unbiased=unbiased, keepdim=keepdim) if not all_dims else fn(xr, unbiased=unbiased)
    upstream = torch.randn(result.shape, dtype=torch.float64)
    result.backward(upstream)
    put(p + "out", result)
    put(p + "upstream", upstream)
    put(p + "grad", xr.grad)


def reduce_cases():
    ties = torch.randint(-3, 4, (3, 4, 5)).to(torch.float64)  # small integers: many ties for the minimum
    x = torch.randn(3, 4, 5, dtype=torch.float64)
    reduce_case("amin_dim1", "amin", ties, [1], False)
    reduce_case("amin_dims02_keep", "amin", ties, [0, 2], True)
    reduce_case("amin_all", "amin", ties, [], False)  # torch.min(x): ties share the gradient too
    reduce_case("min_dim2", "min", ties, [2], False)  # the gradient goes to the index returned
    reduce_case("min_dim0_keep", "min", ties, [0], True)
    reduce_case("argmin_dim1", "argmin", ties, [1], False)
    reduce_case("argmin_dim2_keep", "argmin", ties, [2], True)
    reduce_case("var_dim1", "var", x, [1], False, True)
    reduce_case("var_dims02_keep_biased", "var", x, [0, 2], True, False)
    reduce_case("var_all", "var", x, [], False, True)
    reduce_case("std_dim2", "std", x, [2], False, True)
    reduce_case("std_dims01_keep_biased", "std", x, [0, 1], True, False)
    reduce_case("std_all", "std", x, [], False, True)
    constant = torch.full((2, 3), 1.5, dtype=torch.float64)
    reduce_case("std_constant", "std", constant, [1], False, True)  # std 0: gradient 0, not NaN
    reduce_case("var_one_element", "var", torch.randn(3, 1, dtype=torch.float64), [1], False, True)  # NaN


def adam_case(name, decoupled, weight_decay, steps=6):
    p = f"adam.{name}."
    params = [torch.randn(3, 4, dtype=torch.float64).requires_grad_(), torch.randn(5, dtype=torch.float64).requires_grad_()]
    put(p + "p0", params[0])
    put(p + "p1", params[1])
    put(p + "decoupled", [int(decoupled)], np.int64)
    put(p + "weight_decay", [weight_decay], np.float64)
    put(p + "steps", [steps], np.int64)
    cls = torch.optim.AdamW if decoupled else torch.optim.Adam
    lr, betas, eps = 0.05, (0.8, 0.9), 1e-6
    put(p + "lr", [lr], np.float64)
    put(p + "betas", list(betas), np.float64)
    put(p + "eps", [eps], np.float64)
    opt = cls(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=True)
    for k in range(steps):
        # Gradients that shrink after the first steps, so the running max of v stays above v.
        scale = 3.0 if k < 2 else 0.2
        for i, param in enumerate(params):
            if i == 1 and k == 2:
                param.grad = None  # skipped: its step count and max_exp_avg_sq stay
                continue
            param.grad = torch.randn(param.shape, dtype=torch.float64) * scale
            put(p + f"g{i}.{k}", param.grad)
        opt.step()
        for i, param in enumerate(params):
            put(p + f"after{i}.{k}", param)
            put(p + f"max_exp_avg_sq{i}.{k}", opt.state[param]["max_exp_avg_sq"])


MAXIMIZE_STEPS = 10


def maximize_case(name, kind, lr, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0, amsgrad=False):
    p = f"max.{name}."
    param = torch.randn(3, 4, dtype=torch.float64).requires_grad_()
    target = torch.randn(3, 4, dtype=torch.float64)
    curvature = torch.rand(3, 4, dtype=torch.float64) + 0.5
    put(p + "p0", param)
    put(p + "target", target)
    put(p + "curvature", curvature)
    put(p + "kind", [["sgd", "adam", "adamw"].index(kind)], np.int64)
    put(p + "steps", [MAXIMIZE_STEPS], np.int64)
    put(p + "hyper", [lr, momentum, dampening, weight_decay], np.float64)  # Adam: betas (0.8, 0.9), eps 1e-6
    put(p + "flags", [int(nesterov), int(amsgrad)], np.int64)
    if kind == "sgd":
        opt = torch.optim.SGD([param], lr=lr, momentum=momentum, dampening=dampening, nesterov=nesterov,
                              weight_decay=weight_decay, maximize=True)
    else:
        cls = torch.optim.Adam if kind == "adam" else torch.optim.AdamW
        opt = cls([param], lr=lr, betas=(0.8, 0.9), eps=1e-6, weight_decay=weight_decay, amsgrad=amsgrad,
                  maximize=True)
    for k in range(MAXIMIZE_STEPS):
        opt.zero_grad()
        objective = -(curvature * (param - target) ** 2).sum()
        objective.backward()
        opt.step()
        put(p + f"after.{k}", param)


def maximize_cases():
    maximize_case("sgd", "sgd", lr=0.05)
    maximize_case("sgd_momentum_decay", "sgd", lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.02)
    maximize_case("sgd_nesterov", "sgd", lr=0.03, momentum=0.8, nesterov=True, weight_decay=0.01)
    maximize_case("adam", "adam", lr=0.05, weight_decay=0.02)
    maximize_case("adam_amsgrad", "adam", lr=0.05, amsgrad=True)
    maximize_case("adamw", "adamw", lr=0.05, weight_decay=0.1)


def batch_norm_case():
    bn = nn.BatchNorm2d(3, momentum=None)
    with torch.no_grad():
        bn.weight.copy_(torch.rand(3) + 0.5)
        bn.bias.copy_(torch.randn(3))
    put("bn.weight", bn.weight)
    put("bn.bias", bn.bias)
    batches = 4
    put("bn.batches", [batches], np.int64)
    bn.train()
    for k in range(batches):
        x = torch.randn(4, 3, 2, 2) * (k + 1) + k
        y = bn(x)
        put(f"bn.x.{k}", x)
        put(f"bn.y.{k}", y)
        put(f"bn.running_mean.{k}", bn.running_mean)
        put(f"bn.running_var.{k}", bn.running_var)
        put(f"bn.num_batches_tracked.{k}", bn.num_batches_tracked, np.int64)
    bn.eval()
    x = torch.randn(2, 3, 2, 2)
    put("bn.eval_x", x)
    put("bn.eval_y", bn(x))


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    cross_entropy_cases()
    reduce_cases()
    adam_case("adam", decoupled=False, weight_decay=0.01)
    adam_case("adamw", decoupled=True, weight_decay=0.1)
    batch_norm_case()
    maximize_cases()  # last: the cases above keep the random draws they had before it
    path = os.path.join(os.path.dirname(__file__), "..", "tests", "golden", "options.safetensors")
    safetensors_np.save(path, out, {"format": "duet-golden", "version": FORMAT_VERSION, "model": "options",
                                    "torch": torch.__version__})
    print(f"wrote {os.path.normpath(path)}: {len(out)} tensors")


if __name__ == "__main__":
    main()
