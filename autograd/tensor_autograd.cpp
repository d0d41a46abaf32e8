// The Tensor members that touch autograd state, and the in-place writes.
#include "duet/autograd/engine.h"
#include "duet/autograd/function.h"
#include "duet/autograd/meta.h"
#include "duet/autograd/ops.h"
#include "duet/kernels/kernels.h"

namespace duet {

using autograd::AutogradMeta;
using autograd::ensure_meta;
using autograd::meta;

bool Tensor::requires_grad() const {
  AutogradMeta* m = meta(*this);
  return m && (m->requires_grad || m->grad_fn);
}

const Tensor& Tensor::requires_grad_(bool enabled) const {
  DUET_CHECK(is_leaf(), "requires_grad_: only leaf tensors can change requires_grad; this ", describe(),
             " was produced by ", grad_fn()->name(), ". Use detach() for a new leaf");
  DUET_CHECK(!enabled || is_floating(dtype()), "requires_grad_: only floating tensors can ", "require gradients, got ",
             describe());
  if (enabled || meta(*this)) ensure_meta(*this).requires_grad = enabled;
  return *this;
}

bool Tensor::is_leaf() const {
  AutogradMeta* m = meta(*this);
  return !m || !m->grad_fn;
}

Tensor Tensor::grad() const {
  AutogradMeta* m = meta(*this);
  if (!m) return Tensor();
  std::lock_guard lock(m->mutex);
  return m->grad;
}

void Tensor::set_grad(const Tensor& grad) const {
  DUET_CHECK(!grad.defined() || (grad.sizes() == sizes() && grad.dtype() == dtype() && grad.device() == device()),
             "set_grad: gradient ", grad.describe(), " does not match the tensor ", describe());
  AutogradMeta& m = ensure_meta(*this);
  std::lock_guard lock(m.mutex);
  m.grad = grad;
}

const std::shared_ptr<autograd::Node>& Tensor::grad_fn() const {
  static const std::shared_ptr<autograd::Node> none;
  AutogradMeta* m = meta(*this);
  return m ? m->grad_fn : none;
}

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  autograd::backward({*this}, {gradient}, retain_graph);
}

Tensor Tensor::detach() const { return as_strided(sizes(), strides(), offset()); }

void Tensor::register_hook(GradHook hook) const {
  DUET_CHECK(requires_grad(), "register_hook: ", describe(), " does not require grad");
  if (is_leaf()) {
    ensure_meta(*this).leaf_hooks.push_back(std::move(hook));
  } else {
    grad_fn()->add_pre_hook(meta(*this)->output_nr, std::move(hook));
  }
}

void Tensor::register_post_accumulate_grad_hook(PostAccumulateGradHook hook) const {
  DUET_CHECK(is_leaf() && requires_grad(), "register_post_accumulate_grad_hook: only leaves that ",
             "require grad accumulate a gradient; got ", describe(), is_leaf() ? "" : " (a non-leaf)");
  ensure_meta(*this).post_accumulate_hooks.push_back(std::move(hook));
}

// ---- in-place writes ----
namespace {

// In-place ops are not recorded, so they must not silently change a graph's values. Nor may
// they change pinned memory that an asynchronous copy to a GPU still reads: they wait for it.
void check_writable(const Tensor& t, const char* op) {
  DUET_CHECK(!(GradMode::is_enabled() && t.requires_grad()), op, ": in-place write to ", t.describe(),
             ", which requires grad; do it under NoGradGuard (as optimizers do)");
  for (int64_t d = 0; d < t.dim(); ++d) {
    DUET_CHECK(t.stride(d) != 0 || t.size(d) <= 1, op, ": in-place write to an expanded tensor ", t.describe(),
               " (several elements share one memory location); use contiguous() first");
  }
  t.storage()->wait_for_pending_reads();
}

void check_same_device(const Tensor& t, const Tensor& other, const char* op) {
  DUET_CHECK(t.device() == other.device(), op, ": tensors on different devices: ", t.describe(), " and ",
             other.describe());
}

}  // namespace

const Tensor& Tensor::zero_() const { return fill_(0.0); }

const Tensor& Tensor::fill_(double value) const {
  check_writable(*this, "fill_");
  kernels::fill(*this, value);
  bump_version();
  return *this;
}

const Tensor& Tensor::copy_(const Tensor& src) const {
  check_writable(*this, "copy_");
  DUET_CHECK(broadcast_shapes(src.sizes(), sizes(), "copy_") == sizes(), "copy_: source ", src.describe(),
             " cannot be broadcast to ", describe());
  kernels::copy(src, *this);
  bump_version();
  return *this;
}

const Tensor& Tensor::add_(const Tensor& other, double alpha) const {
  check_writable(*this, "add_");
  check_same_device(*this, other, "add_");
  DUET_CHECK(other.dtype() == dtype(), "add_: dtypes differ: ", describe(), " and ", other.describe());
  DUET_CHECK(broadcast_shapes(other.sizes(), sizes(), "add_") == sizes(), "add_: ", other.describe(),
             " cannot be broadcast to ", describe());
  NoGradGuard no_grad;
  Tensor scaled = alpha == 1.0 ? other : duet::mul(other, scalar_like(alpha, other));
  kernels::binary(kernels::BinaryOp::add, *this, scaled, *this);
  bump_version();
  return *this;
}

const Tensor& Tensor::mul_(double factor) const {
  check_writable(*this, "mul_");
  kernels::binary(kernels::BinaryOp::mul, *this, scalar_like(factor, *this), *this);
  bump_version();
  return *this;
}

}  // namespace duet
