// The geometry of a reduction over dims, shared by the reduction ops (reduce_ops.cpp,
// variance_ops.cpp); not part of the public op API.
#pragma once

#include <cstdint>
#include <vector>

#include "duet/core/tensor.h"

namespace duet::autograd {

// Normalised dims (ascending, unique; all dims when none given) and the output shapes with and
// without the reduced dims.
struct ReductionPlan {
  std::vector<int64_t> dims;
  Shape keepdim_shape;
  Shape out_shape;

  // Input elements per output (1 for a 0-d input).
  int64_t count(const Shape& input_shape) const;
};

// Throws naming `op` and x for a dim out of range or given twice.
ReductionPlan plan_reduction(const char* op, const Tensor& x, std::vector<int64_t> dims, bool keepdim);

}  // namespace duet::autograd
