// The input checks every op runs before computing. One place, so every error reads alike:
//   "add: tensors on different devices: f32[2, 3] on cpu:0 and f32[3] on cpu:1"
// Ops never move data between devices or convert dtypes silently; they throw instead.
#pragma once

#include <vector>

#include "duet/core/tensor.h"

namespace duet::autograd {

void check_defined(const char* op, const Tensor& t);
void check_same_device(const char* op, const Tensor& a, const Tensor& b);
void check_same_dtype(const char* op, const Tensor& a, const Tensor& b);
// Same device and same dtype: what every binary op needs.
void check_compatible(const char* op, const Tensor& a, const Tensor& b);
// The same over a list (cat, stack); the message names the offending tensor's index.
void check_compatible(const char* op, const std::vector<Tensor>& tensors);
void check_floating(const char* op, const Tensor& t);

}  // namespace duet::autograd
