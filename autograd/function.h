// What a differentiable op uses to record itself in the graph.
//
//   Tensor mul(const Tensor& a, const Tensor& b) {
//     Tensor out = ...compute with kernels...;
//     if (needs_grad({a, b})) {
//       auto node = std::make_shared<MulBackward>(...saved tensors...);
//       record(node, {a, b}, {out});
//     }
//     return out;
//   }
#pragma once

#include <initializer_list>
#include <memory>

#include "duet/autograd/grad_mode.h"
#include "duet/autograd/node.h"

namespace duet::autograd {

// True when grad mode is on and any defined input requires grad.
bool needs_grad(std::initializer_list<Tensor> inputs);
bool needs_grad(const TensorList& inputs);

// The edge a gradient for `t` flows into: its grad_fn, or the leaf's AccumulateGrad, or an
// invalid edge when `t` does not require grad.
Edge gradient_edge(const Tensor& t);

// Sets node's next edges from `inputs` and makes node the grad_fn of each output
// (output i gets output_nr i). The node's device (where backward runs it) is outputs[0]'s.
void record(const std::shared_ptr<Node>& node, const TensorList& inputs, const TensorList& outputs);

// Sums `grad` down to `shape`, undoing broadcasting: the one place that un-broadcasts.
Tensor sum_to_shape(const Tensor& grad, const Shape& shape);

}  // namespace duet::autograd
