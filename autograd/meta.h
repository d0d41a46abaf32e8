// AutogradMeta: the autograd state of one tensor, hung off TensorImpl::autograd.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "duet/autograd/node.h"

namespace duet::autograd {

struct AutogradMeta {
  bool requires_grad = false;            // set on leaves by requires_grad_(); implied by grad_fn
  Tensor grad;                           // accumulated gradient of a leaf
  std::shared_ptr<Node> grad_fn;         // null for leaves
  uint32_t output_nr = 0;                // which output of grad_fn this tensor is
  std::weak_ptr<Node> grad_accumulator;  // the leaf's AccumulateGrad, shared by all its uses
  std::vector<GradHook> leaf_hooks;      // run on the incoming gradient before accumulation
  std::vector<PostAccumulateGradHook> post_accumulate_hooks;
  std::mutex mutex;  // guards grad across the engine's device threads
};

// The tensor's meta, or null when it has none.
AutogradMeta* meta(const Tensor& t);
// The tensor's meta, created on first use.
AutogradMeta& ensure_meta(const Tensor& t);

}  // namespace duet::autograd
