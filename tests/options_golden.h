// PyTorch 1.13's values for the options duet follows, from tests/golden/options.safetensors
// (written by tools/make_options_golden.py), checked on any device: the CPU tests
// (tests/cpu/test_options_golden.cpp) and their CUDA twins (tests/cuda/test_cuda_options.cpp) run
// the same cases. Each function runs every case of its kind that the file holds, so adding a
// case to the script adds it to both.
#pragma once

#include "duet/core/device.h"

namespace duet::test {

// F.cross_entropy with ignore_index, per-class weight, label_smoothing and [N, C, d...] logits:
// the loss under every reduction and its gradient.
void check_cross_entropy_golden(Device device);

// torch.amin, torch.min (with and without a dim), torch.argmin, torch.var and torch.std over
// chosen dims, with keepdim and unbiased: values, indices and gradients (ties among the minima).
void check_reductions_golden(Device device);

// torch.optim.Adam and AdamW with amsgrad=True: the parameters and max_exp_avg_sq after every
// step, one parameter skipping a step (its own step count, PyTorch's state['step']).
void check_amsgrad_golden(Device device);

// torch.optim.SGD (plain, with momentum, dampening and weight decay, Nesterov), Adam (with weight
// decay, with amsgrad) and AdamW with maximize=True ascending a quadratic for 10 steps, each step's
// gradient computed from the parameter the last step left: the parameter after every step.
void check_maximize_golden(Device device);

// nn.BatchNorm2d(momentum=None): the cumulative average of the batch statistics over several
// training batches (running_mean, running_var, num_batches_tracked), then an eval forward.
void check_cumulative_batch_norm_golden(Device device);

}  // namespace duet::test
