// Helpers for the CUDA-vs-CPU tests. Plain C++ on duet's core and kernels layers only: tensors
// are built from TensorImpl + Storage (no autograd factories), data moves with kernels::copy.
#pragma once

#include <cstdint>
#include <string>

#include "duet/core/tensor.h"

namespace duet::test {

// A dense tensor, uninitialised.
Tensor empty_tensor(const Shape& sizes, DType dtype, Device device);
// A dense copy of `t` on `device` (kernels::copy; across devices when they differ).
Tensor copy_to(const Tensor& t, Device device);

// The same values in the same strided layout on the host and on a CUDA device: a random
// buffer holding `offset` plus the layout's span, copied as one block, then viewed with
// as_strided on both sides. Values are uniform in [low, high]; integral ones when `integral`
// (always for integer dtypes), to produce ties for comparisons, max and min.
struct TensorPair {
  Tensor cpu, cuda;
};
TensorPair random_pair(const Shape& sizes, const Shape& strides, int64_t offset, DType dtype, double low, double high,
                       uint64_t seed, bool integral = false);
TensorPair random_pair(const Shape& sizes, DType dtype, double low, double high, uint64_t seed, bool integral = false);

// A CUDA output with guard bands: a buffer of kGuard sentinel elements, the view's span and
// kGuard more, with `view` laid out (strides as given) in the middle. check() fails the test if
// any element the view does not cover was written.
class GuardedOutput {
 public:
  static constexpr int64_t kGuard = 64;
  GuardedOutput(const Shape& sizes, const Shape& strides, DType dtype, Device device);
  GuardedOutput(const Shape& sizes, DType dtype, Device device);  // dense view
  const Tensor& view() const { return view_; }
  // Copies the whole buffer to the host, checks the sentinels, returns the view's values as a
  // dense host tensor.
  Tensor check_and_fetch() const;

 private:
  Tensor buffer_;
  Tensor view_;
};

// Every element of `actual` within atol + rtol * |expected| of `expected` (same shape; NaNs
// must match). Reports the first mismatches with their index.
void require_close(const Tensor& actual, const Tensor& expected, double rtol, double atol, const std::string& what);
// Bitwise equal values.
void require_identical(const Tensor& actual, const Tensor& expected, const std::string& what);

// Tolerances for comparing CUDA math with the CPU's, where neither promises the other's bits:
// nvcc contracts a * b + c into one fma by default, and the device's log, exp, sin, cos and tanh
// are 1 to 2 ulp from the true value (glibc's within 1), which a functor chaining a few of them
// (a sigmoid's backward, softplus) compounds. 2e-6 relative for f32 is about 17 ulp, 1e-12 for
// f64 about 4,500: room for those differences, far below any wrong formula. The comparisons that
// are bit for bit are those whose arithmetic is exact or pinned: copies and casts, fill, arange
// and uniform (explicit round-to-nearest intrinsics), the optimizer step (built with
// --fmad=false), max pooling's values and indices.
double rtol_for(DType dtype);

}  // namespace duet::test
