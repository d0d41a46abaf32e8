// Small helpers shared by the op implementations (not part of the public op API).
#pragma once

#include <cstddef>
#include <string>

#include "duet/autograd/factory.h"
#include "duet/autograd/node.h"

namespace duet::autograd {

// Options for a new tensor with t's dtype and device (no requires_grad).
inline TensorOptions options_of(const Tensor& t) { return {.dtype = t.dtype(), .device = t.device()}; }
inline TensorOptions options_of(const Tensor& t, DType dtype) { return {.dtype = dtype, .device = t.device()}; }

// Whether backward must produce a gradient for forward input `i` of `node`: its edge is valid
// only when that input required grad when the op was recorded.
inline bool input_needs_grad(const Node& node, size_t i) {
  return i < node.next_edges().size() && node.next_edges()[i].valid();
}

// "mul" -> "MulBackward": node names in PyTorch's style (printed as grad_fn=<MulBackward>).
inline std::string backward_name(const char* op) {
  std::string name(op);
  if (!name.empty() && name[0] >= 'a' && name[0] <= 'z') name[0] = static_cast<char>(name[0] - 'a' + 'A');
  return name + "Backward";
}

}  // namespace duet::autograd
