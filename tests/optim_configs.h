// The fused-optimizer configurations whose math differs, shared by the CPU kernel tests
// (tests/cpu/test_optim_kernels.cpp) and the CUDA-vs-CPU tests (tests/cuda/test_cuda_optim.cpp).
#pragma once

#include <string>
#include <vector>

#include "duet/kernels/optim_kernels.h"

namespace duet::test {

// Every SGD variant: with and without momentum, dampening, weight decay and Nesterov (which
// needs momentum and no dampening), and maximize with weight decay. first_step is left false: the tests set it per
// step.
std::vector<kernels::SgdUpdateArgs> sgd_configs();
// Adam with and without L2 weight decay, AdamW, and betas of 0 (m is then the last gradient), each
// with and without amsgrad, and maximize with weight decay.
// The bias corrections are left at 1: the tests set them per step (bias_corrected()).
std::vector<kernels::AdamUpdateArgs> adam_configs();
// `config` with the bias corrections of step t (1-based): 1 - beta^t.
kernels::AdamUpdateArgs bias_corrected(kernels::AdamUpdateArgs config, int t);

std::string describe(const kernels::SgdUpdateArgs& args);
std::string describe(const kernels::AdamUpdateArgs& args);

}  // namespace duet::test
