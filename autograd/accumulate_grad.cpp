#include "duet/autograd/accumulate_grad.h"

#include "duet/autograd/meta.h"
#include "duet/kernels/kernels.h"

namespace duet::autograd {
namespace {

// A gradient can become .grad as it is only if nothing else sees its storage and it is a
// plain dense tensor; otherwise (an expanded scalar, a view of a buffer) it is copied.
bool can_adopt(const Tensor& g) {
  return g.is_contiguous() && g.impl_ptr().use_count() == 1 && g.storage().use_count() == 1 &&
         static_cast<int64_t>(g.storage()->nbytes()) == g.nbytes();
}

Tensor dense_copy(const Tensor& g) {
  Tensor out = empty_contiguous(g.sizes(), g.dtype(), g.device());
  kernels::copy(g, out);
  return out;
}

}  // namespace

TensorList AccumulateGrad::apply(TensorList&& grads) {
  Tensor leaf(leaf_);
  AutogradMeta& m = ensure_meta(leaf);
  Tensor g = std::move(grads.at(0));
  if (!g.defined()) return {};
  for (const GradHook& hook : m.leaf_hooks) {
    Tensor replaced = hook(g);
    if (replaced.defined()) g = std::move(replaced);
  }
  DUET_CHECK(g.sizes() == leaf.sizes() && g.dtype() == leaf.dtype() && g.device() == leaf.device(),
             "AccumulateGrad: gradient ", g.describe(), " does not match its leaf ", leaf.describe());
  {
    std::lock_guard lock(m.mutex);
    if (!m.grad.defined()) {
      m.grad = can_adopt(g) ? g : dense_copy(g);
    } else {
      kernels::binary(kernels::BinaryOp::add, m.grad, g, m.grad);
      m.grad.bump_version();
    }
  }
  for (const PostAccumulateGradHook& hook : m.post_accumulate_hooks) hook(leaf);
  return {};
}

}  // namespace duet::autograd
