#!/usr/bin/python3
"""Writes tests/golden/conv_pool.safetensors: PyTorch's conv2d and pooling with their options.

Each case is a group of f64 tensors named `<op>.<case>.<field>`: the input `x` (and for conv2d
`weight` and perhaps `bias`), an upstream gradient `grad_out`, and what PyTorch computes from them:
`out`, `grad_x` (and `grad_weight`, `grad_bias`; `indices` for max pooling). `<op>.<case>.params`
(i64) holds the options, so duet's test (tests/cpu/test_conv_pool_golden.cpp) reads each case
from the file alone:
  conv2d                [stride h, w, padding h, w, dilation h, w, groups]
  max_pool2d/avg_pool2d [kernel h, w, stride h, w, padding h, w, ceil_mode, count_include_pad,
                         dilation h, w, divisor_override (0: None)]
  adaptive_*_pool2d     [output h, w]
The file is committed, so the tests need no PyTorch.

Run with Debian's python3-torch:  /usr/bin/python3 tools/make_conv_pool_golden.py
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np  # noqa: E402

FORMAT_VERSION = "1"

# name: (x shape, weight shape, bias, stride, padding, dilation, groups)
CONV = {
    "grouped_per_axis": ((2, 4, 7, 9), (6, 2, 3, 2), True, (2, 1), (1, 0), (1, 2), 2),
    "depthwise_dilated": ((2, 3, 8, 8), (6, 1, 3, 3), True, (1, 1), (2, 2), (2, 2), 3),
    "dilated": ((1, 2, 9, 7), (3, 2, 2, 3), False, (1, 2), (0, 1), (3, 2), 1),
    "pointwise_grouped": ((2, 4, 5, 6), (6, 2, 1, 1), True, (1, 2), (0, 0), (1, 1), 2),
    "depthwise_strided": ((2, 4, 6, 5), (4, 1, 3, 3), False, (2, 2), (1, 1), (1, 1), 4),
}

# name: (x shape, kernel, stride, padding, ceil_mode, count_include_pad[, dilation, divisor_override])
MAX_POOL = {
    "rect": ((2, 2, 7, 9), (3, 2), (2, 1), (1, 0), False, True),
    "ceil": ((1, 2, 8, 7), (3, 3), (2, 2), (1, 1), True, True),
    "ceil_last_window_dropped": ((1, 1, 5, 5), (3, 3), (3, 3), (1, 1), True, True),
    "ceil_rect": ((1, 2, 6, 7), (2, 3), (2, 2), (0, 1), True, True),
}
AVG_POOL = {
    "rect": ((2, 2, 7, 9), (3, 2), (2, 1), (1, 0), False, True),
    "rect_exclude_pad": ((2, 2, 7, 9), (3, 2), (2, 1), (1, 0), False, False),
    "ceil": ((1, 2, 8, 7), (3, 3), (2, 2), (1, 1), True, True),
    "ceil_exclude_pad": ((1, 2, 8, 7), (3, 3), (2, 2), (1, 1), True, False),
    "ceil_2x2_odd_edge": ((1, 1, 5, 7), (2, 2), (2, 2), (0, 0), True, True),
    "ceil_last_window_dropped": ((1, 1, 5, 5), (3, 3), (3, 3), (1, 1), True, False),
}

# Made after the cases above, so that theirs keep the random draws they had before these were added.
MAX_POOL_DILATED = {
    "dilated": ((2, 2, 9, 8), (3, 2), (1, 2), (1, 1), False, True, (2, 3), 0),
    "dilated_ceil": ((1, 2, 10, 9), (3, 3), (2, 2), (1, 1), True, True, (2, 2), 0),
    "dilated_rect_pad": ((1, 1, 7, 11), (2, 4), (3, 2), (1, 2), True, True, (3, 2), 0),
}
AVG_POOL_DIVISOR = {
    "divisor_override": ((2, 2, 7, 9), (3, 2), (2, 1), (1, 0), False, True, (1, 1), 5),
    "divisor_override_ceil_exclude_pad": ((1, 2, 8, 7), (3, 3), (2, 2), (1, 1), True, False, (1, 1), 4),
    "divisor_override_2x2_negative": ((1, 1, 5, 6), (2, 2), (2, 2), (0, 0), False, True, (1, 1), -3),
}

# name: (x shape, output size)
ADAPTIVE_AVG = {"shrink_rect": ((2, 3, 7, 5), (3, 4)), "mixed": ((1, 2, 5, 4), (7, 2))}
ADAPTIVE_MAX = {"shrink_rect": ((2, 3, 7, 5), (3, 4)), "rect": ((1, 2, 5, 9), (2, 4)), "grow": ((1, 1, 3, 4), (5, 6))}


def leaf(t):
    return t.double().requires_grad_()


def distinct(shape):
    """Distinct values, so every maximum is unique and its gradient well defined."""
    n = int(np.prod(shape))
    return leaf(torch.randperm(n).reshape(shape) * 0.1 - 1)


def backward(out, inputs):
    grad_out = torch.randn(out.shape, dtype=torch.float64)
    grads = torch.autograd.grad(out, inputs, grad_out)
    return grad_out, grads


def numpy(t):
    return t.detach().numpy().copy()


def conv_cases(out):
    for name, (x_shape, w_shape, has_bias, stride, padding, dilation, groups) in CONV.items():
        key = f"conv2d.{name}"
        x, w = leaf(torch.randn(x_shape)), leaf(torch.randn(w_shape))
        inputs = [x, w]
        bias = None
        if has_bias:
            bias = leaf(torch.randn(w_shape[0]))
            inputs.append(bias)
        y = F.conv2d(x, w, bias, stride=stride, padding=padding, dilation=dilation, groups=groups)
        grad_out, grads = backward(y, inputs)
        out[f"{key}.params"] = np.array([*stride, *padding, *dilation, groups], dtype=np.int64)
        out[f"{key}.x"], out[f"{key}.weight"] = numpy(x), numpy(w)
        out[f"{key}.grad_out"], out[f"{key}.out"] = numpy(grad_out), numpy(y)
        out[f"{key}.grad_x"], out[f"{key}.grad_weight"] = numpy(grads[0]), numpy(grads[1])
        if has_bias:
            out[f"{key}.bias"], out[f"{key}.grad_bias"] = numpy(bias), numpy(grads[2])


def pool_cases(out, op, cases):
    for name, (x_shape, kernel, stride, padding, ceil_mode, count_include_pad, *more) in cases.items():
        dilation, divisor_override = more if more else ((1, 1), 0)
        key = f"{op}.{name}"
        if op == "max_pool2d":
            x = distinct(x_shape)
            y, indices = F.max_pool2d(x, kernel, stride, padding, dilation=dilation, ceil_mode=ceil_mode,
                                      return_indices=True)
            out[f"{key}.indices"] = indices.numpy().astype(np.int64)
        else:
            x = leaf(torch.randn(x_shape))
            y = F.avg_pool2d(x, kernel, stride, padding, ceil_mode=ceil_mode, count_include_pad=count_include_pad,
                             divisor_override=divisor_override or None)
        grad_out, (grad_x,) = backward(y, [x])
        out[f"{key}.params"] = np.array([*kernel, *stride, *padding, ceil_mode, count_include_pad, *dilation,
                                         divisor_override], dtype=np.int64)
        out[f"{key}.x"], out[f"{key}.grad_out"] = numpy(x), numpy(grad_out)
        out[f"{key}.out"], out[f"{key}.grad_x"] = numpy(y), numpy(grad_x)


def adaptive_cases(out, op, cases):
    for name, (x_shape, size) in cases.items():
        key = f"{op}.{name}"
        if op == "adaptive_max_pool2d":
            x = distinct(x_shape)
            y, indices = F.adaptive_max_pool2d(x, size, return_indices=True)
            out[f"{key}.indices"] = indices.numpy().astype(np.int64)
        else:
            x = leaf(torch.randn(x_shape))
            y = F.adaptive_avg_pool2d(x, size)
        grad_out, (grad_x,) = backward(y, [x])
        out[f"{key}.params"] = np.array(size, dtype=np.int64)
        out[f"{key}.x"], out[f"{key}.grad_out"] = numpy(x), numpy(grad_out)
        out[f"{key}.out"], out[f"{key}.grad_x"] = numpy(y), numpy(grad_x)


def main():
    torch.manual_seed(0)
    out = {}
    conv_cases(out)
    pool_cases(out, "max_pool2d", MAX_POOL)
    pool_cases(out, "avg_pool2d", AVG_POOL)
    adaptive_cases(out, "adaptive_avg_pool2d", ADAPTIVE_AVG)
    adaptive_cases(out, "adaptive_max_pool2d", ADAPTIVE_MAX)
    pool_cases(out, "max_pool2d", MAX_POOL_DILATED)
    pool_cases(out, "avg_pool2d", AVG_POOL_DIVISOR)
    path = os.path.join(os.path.dirname(__file__), "..", "tests", "golden", "conv_pool.safetensors")
    safetensors_np.save(path, out, {"format": "duet-golden", "version": FORMAT_VERSION, "ops": "conv2d and pooling",
                                    "torch": torch.__version__})
    cases = len([k for k in out if k.endswith(".params")])
    print(f"wrote {os.path.normpath(path)}: {cases} cases, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
