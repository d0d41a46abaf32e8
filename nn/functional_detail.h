// What the nn::functional op files share (not part of the public API).
#pragma once

#include <cstdint>
#include <string>

#include "duet/autograd/grad_mode.h"
#include "duet/core/error.h"
#include "duet/core/tensor.h"
#include "duet/kernels/nn_kernels.h"
#include "duet/nn/functional.h"

namespace duet::nn::functional::detail {

// t's data laid out contiguously for the NN kernels (which take contiguous operands), without
// recording a graph node: the op records its own node against the original tensor.
inline Tensor dense(const Tensor& t) {
  if (!t.defined()) return t;
  NoGradGuard no_grad;
  return t.contiguous();
}

inline std::string describe_or_none(const Tensor& t) { return t.defined() ? t.describe() : "none"; }

// "conv2d: expected input of rank 4 ([N, C, H, W]), got f32[3, 28, 28] on cpu:0"
inline void check_rank(const char* op, const char* what, const Tensor& t, int64_t rank, const char* layout) {
  DUET_CHECK(t.dim() == rank, op, ": expected ", what, " of rank ", rank, " (", layout, "), got ", t.describe());
}

// A pooling's window, with stride 0 resolved to the kernel, checked against an input of shape
// `in` [N, C, H, W] (`what` in the errors); and the output shape.
struct PoolPlan {
  kernels::Pool2dGeometry window;
  Shape out_shape;
};
PoolPlan plan_pool(const char* op, const Shape& in, const std::string& what, const Pool2dParams& params);

// The loss per element, reduced as asked (mean of no elements is NaN, as in PyTorch).
Tensor reduce_loss(const Tensor& losses, Reduction reduction);

}  // namespace duet::nn::functional::detail
