// Value conversion between duet's dtypes, without C++'s undefined cases. Shared by the CPU
// loops and the CUDA kernels (DUET_HD), so a cast gives the same value on every device.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "duet/core/macros.h"

namespace duet::kernels {

// Like static_cast, but a floating value going to an integer type is first taken to int64
// (NaN -> 0, clamped to int64's range), and int64 -> u8 wraps modulo 256, as PyTorch does
// on x86. A plain static_cast is undefined behaviour for out-of-range values.
// (INT64_MIN/MAX rather than numeric_limits: constexpr host functions are not callable in
// device code without --expt-relaxed-constexpr.)
template <class To, class From> DUET_HD inline To cast_value(From v) {
  if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    if (std::isnan(v)) return To(0);
    constexpr double lo = -9223372036854775808.0, hi = 9223372036854775808.0;
    double d = static_cast<double>(v);
    int64_t i = d <= lo ? INT64_MIN : (d >= hi ? INT64_MAX : static_cast<int64_t>(d));
    return static_cast<To>(i);
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace duet::kernels
