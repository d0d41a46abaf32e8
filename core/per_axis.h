// PerAxis: one value for each spatial axis of an image, {h, w}, as PyTorch's `stride=(sh, sw)`.
// One value stands for both axes, so `stride = 2` reads as it always did and `stride = {2, 1}`
// sets the axes apart. Convolution and pooling geometry (kernels/nn_kernels.h,
// nn/functional.h, the layers' options) are made of them.
#pragma once

#include <cstdint>
#include <ostream>

#include "duet/core/macros.h"

namespace duet {

struct PerAxis {
  int64_t h = 0, w = 0;

  constexpr PerAxis() = default;
  // Implicit on purpose: a single value is a square window, as in PyTorch.
  DUET_HD constexpr PerAxis(int64_t both) : h(both), w(both) {}
  DUET_HD constexpr PerAxis(int64_t h_value, int64_t w_value) : h(h_value), w(w_value) {}
  constexpr bool operator==(const PerAxis&) const = default;
};

// "2" when both axes agree, else "(2, 1)": errors and layer names stay as they were for square
// windows.
inline std::ostream& operator<<(std::ostream& out, PerAxis v) {
  if (v.h == v.w) return out << v.h;
  return out << '(' << v.h << ", " << v.w << ')';
}

}  // namespace duet
