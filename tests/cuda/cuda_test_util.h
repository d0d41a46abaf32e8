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

// Tolerances for comparing CUDA math (device libm, fma contraction) with the CPU's.
double rtol_for(DType dtype);

}  // namespace duet::test
