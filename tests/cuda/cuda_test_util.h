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

// What a CUDA result may differ from the CPU's by, and the check for each:
// - Nothing (require_identical) where both sides do the same correctly rounded IEEE operations in
//   the same order: copies and casts, fill, integer ops, comparisons, +, -, *, / and sqrt as one
//   op each, max/min and argmax/argmin, max pooling's values, indices and backward gather, arange
//   and uniform (explicit round-to-nearest intrinsics), and the files built with --fmad=false
//   (CMakeLists.txt): the optimizer step, and duet's batch norm given the same statistics.
// - A few ulp (require_within_ulps, the bounds below) where each side calls its own math library
//   once, exp, log, tanh or pow (sigmoid: exp_f32, one polynomial that nvcc contracts into fmas
//   and the CPU may not, then 1 + e and a division).
// - rtol_for (require_close, relative and absolute) where the device's differences are then
//   multiplied or cancelled: derivatives such as g * (1 - y * y), whose products nvcc contracts
//   into one fma (exact product) and the CPU rounds, or sums added in another order. There an
//   ulp bound means nothing near a result of 0, so the bound is absolute as well as relative.

// Every element of `actual` within atol + rtol * |expected| of `expected` (same shape; NaNs
// must match). Reports the first mismatches with their index.
void require_close(const Tensor& actual, const Tensor& expected, double rtol, double atol, const std::string& what);
// Bitwise equal values.
void require_identical(const Tensor& actual, const Tensor& expected, const std::string& what);
// Every element of `actual` (f32 or f64, as `expected`) at most `max_ulps` representable values
// from `expected`'s: the same bound at every magnitude. +0 and -0 are 0 apart; NaNs must match.
void require_within_ulps(const Tensor& actual, const Tensor& expected, uint64_t max_ulps, const std::string& what);

// Two math libraries' results for one call of exp, log or tanh: CUDA documents at most 2 ulp
// (expf, tanhf; logf and the f64 ones 1), glibc's are within 2, and one ulp more where the two
// straddle a power of two, whose ulps below are half the size.
inline constexpr uint64_t kLibmUlps = 5;
// sigmoid: 1 / (1 + e) with e = exp(-x) from each side's exp (exp_f32 for f32, within 2 ulp on
// both), whose difference 1 + e damps, and the two roundings of each side.
inline constexpr uint64_t kSigmoidUlps = kLibmUlps + 2;
// pow: CUDA documents up to 8 ulp for powf (4 in recent guides) and 2 for pow, glibc within 1.
inline constexpr uint64_t kPowUlps = 8 + 1 + 1;

// 2e-6 relative and absolute for f32 (about 17 ulp at 1), 1e-12 for f64 (about 4,500 ulp): room
// for the contractions and orders above, far below any wrong formula.
double rtol_for(DType dtype);

}  // namespace duet::test
