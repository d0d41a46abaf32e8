// exp for f32 in straight-line arithmetic: no branches and no libm call, so a CPU loop over it
// vectorises (glibc's expf is a scalar call the compiler cannot widen), and the CUDA kernels
// evaluate the same polynomial. Not always to the same bits: nvcc contracts its multiply-adds
// into fmas, as the CPU compiler may under -march=native; either way within about 2 ulp of exp.
//
// Method (as in Cephes' expf): write x = n ln2 + r with n an integer and |r| <= ln2/2, so
// exp(x) = 2^n exp(r); exp(r) is a degree-7 polynomial, and 2^n is built in the exponent bits.
// Accurate to about 2 ulp over the normal range. Below -87.3 it returns 0 (the true value is
// subnormal or 0); above 88.38 it returns +inf (about 0.3 before the float range ends); NaN
// stays NaN.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "duet/core/macros.h"

namespace duet::kernels {

// std::bit_cast between float and uint32_t, for host and device code alike.
template <class To, class From> DUET_HD inline To bit_cast_f32(From x) {
  static_assert(sizeof(To) == 4 && sizeof(From) == 4, "float <-> uint32_t only");
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<To, uint32_t>) return __float_as_uint(x);
  else return __uint_as_float(x);
#else
  To out;
  std::memcpy(&out, &x, sizeof out);
  return out;
#endif
}

DUET_HD inline float exp_f32(float x) {
  // Clamp so that n stays in [-127, 128]: 2^-127 is built as 0 and 2^128 as +inf, below.
  x = x < -88.0f ? -88.0f : x;
  x = x > 89.0f ? 89.0f : x;
  // n = round(x / ln2): adding 1.5 * 2^23 pushes the fraction out of the mantissa, leaving
  // n in t's low mantissa bits.
  const float shifter = 12582912.0f;
  const float t = x * 1.44269504088896341f + shifter;
  const float n = t - shifter;
  // r = x - n ln2, with ln2 split in two so that n * (first part) is exact (Cody-Waite).
  const float r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
  // exp(r) = 1 + r + r^2 P(r), Cephes' minimax coefficients.
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float exp_r = p * r * r + r + 1.0f;
  // 2^n: the exponent field n + 127, from t's low bits (n << 23 wraps modulo 2^32 as needed).
  const float two_n = bit_cast_f32<float>((bit_cast_f32<uint32_t>(t) << 23) + (127u << 23));
  return exp_r * two_n;
}

}  // namespace duet::kernels
