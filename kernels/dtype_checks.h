// Argument checks that the CPU and CUDA kernels share.
#pragma once

#include "duet/core/error.h"
#include "duet/core/tensor.h"

namespace duet::kernels {

// Binary kernels and `where` take both operands in one dtype: the ops above them promote first.
inline void check_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  DUET_CHECK(a.dtype() == b.dtype(), op, ": dtypes differ: ", a.describe(), " and ", b.describe());
}

}  // namespace duet::kernels
