// var and std on rows whose values are all equal, run on any device: the CPU test
// (tests/cpu/test_gradcheck.cpp) and its CUDA twin (tests/cuda/test_cuda_reduce_matmul.cpp).
#pragma once

#include "duet/core/device.h"

namespace duet::test {

// Constant rows whose mean is not exactly representable (0.1, 1/3, ...), in f32 and f64, plain
// and made by expand, reduced over one dim and over two: var and std are exactly 0 and so are
// their gradients, as in PyTorch.
void check_constant_rows_spread(Device device);

}  // namespace duet::test
