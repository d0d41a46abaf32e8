#include "duet/autograd/function.h"

#include "duet/autograd/accumulate_grad.h"
#include "duet/autograd/meta.h"
#include "duet/autograd/ops.h"

namespace duet::autograd {

bool needs_grad(std::initializer_list<Tensor> inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : inputs) {
    if (t.defined() && t.requires_grad()) return true;
  }
  return false;
}

bool needs_grad(const TensorList& inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : inputs) {
    if (t.defined() && t.requires_grad()) return true;
  }
  return false;
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined()) return {};
  AutogradMeta* m = meta(t);
  if (!m) return {};
  if (m->grad_fn) return {m->grad_fn, m->output_nr};
  if (!m->requires_grad) return {};
  std::lock_guard lock(m->mutex);
  std::shared_ptr<Node> accumulator = m->grad_accumulator.lock();
  if (!accumulator) {
    accumulator = std::make_shared<AccumulateGrad>(t.impl_ptr());
    m->grad_accumulator = accumulator;
  }
  return {accumulator, 0};
}

void record(const std::shared_ptr<Node>& node, const TensorList& inputs, const TensorList& outputs) {
  std::vector<Edge> edges;
  edges.reserve(inputs.size());
  for (const Tensor& input : inputs) edges.push_back(gradient_edge(input));
  node->set_next_edges(std::move(edges));
  node->set_num_outputs(static_cast<uint32_t>(outputs.size()));
  if (!outputs.empty()) node->set_device(outputs[0].device());
  for (size_t i = 0; i < outputs.size(); ++i) {
    AutogradMeta& m = ensure_meta(outputs[i]);
    m.grad_fn = node;
    m.output_nr = static_cast<uint32_t>(i);
  }
}

Tensor sum_to_shape(const Tensor& grad, const Shape& shape) {
  if (grad.sizes() == shape) return grad;
  int64_t lead = grad.dim() - static_cast<int64_t>(shape.size());
  DUET_CHECK(lead >= 0, "sum_to_shape: cannot reduce ", grad.describe(), " to shape ", shape_str(shape));
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < grad.dim(); ++d) {
    bool broadcast = d < lead || (shape[static_cast<size_t>(d - lead)] == 1 && grad.size(d) != 1);
    if (broadcast) dims.push_back(d);
  }
  Tensor reduced = dims.empty() ? grad : sum(grad, dims, /*keepdim=*/true);
  return reduced.reshape(shape);
}

}  // namespace duet::autograd
