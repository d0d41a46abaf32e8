// A kernel's tensor argument with the name of its parameter, for the argument checks' errors
// (nn_dispatch.cpp, optim_dispatch.cpp).
#pragma once

#include <string>

#include "duet/core/tensor.h"

namespace duet::kernels {

// An optional one may be undefined (no bias, no running statistics, a gradient not wanted).
struct Operand {
  const char* role;
  const Tensor& tensor;
  bool optional = false;

  std::string str() const { return std::string(role) + " " + tensor.describe(); }
};

}  // namespace duet::kernels
