// DUET_CONV_IM2COL=1 keeps every convolution on im2col + GEMM, on both backends: the CPU's
// direct kernels and CUDA's cuDNN are skipped (kernels/cpu/conv2d.cpp, kernels/cuda/conv2d.cpp).
// Read at every call (a getenv costs nothing next to a convolution), so a test or benchmark can
// compare both paths in one process.
#pragma once

#include <cstdlib>
#include <cstring>

namespace duet::kernels {

inline bool conv_im2col_requested() {
  const char* value = std::getenv("DUET_CONV_IM2COL");
  return value && std::strcmp(value, "1") == 0;
}

}  // namespace duet::kernels
