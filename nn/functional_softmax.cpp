// softmax, log_softmax and the fused cross_entropy, with their backward nodes.
#include <algorithm>

#include "duet/autograd/checks.h"
#include "duet/autograd/factory.h"
#include "duet/autograd/function.h"
#include "duet/autograd/op_helpers.h"
#include "duet/kernels/nn_kernels.h"
#include "duet/nn/functional.h"
#include "duet/nn/functional_detail.h"

namespace duet::nn::functional {
namespace {

using autograd::Node;
using autograd::SavedTensor;
using autograd::TensorList;

enum class SoftmaxKind { softmax, log_softmax };

// Both gradients read only the forward output.
class SoftmaxBackward final : public Node {
 public:
  SoftmaxBackward(SoftmaxKind kind, const Tensor& out, int64_t dim) : kind_(kind), out_(out), dim_(dim) {}

  TensorList apply(TensorList&& grads) override {
    if (!grads.at(0).defined()) return {Tensor()};
    const Tensor grad = detail::dense(grads[0]);
    const Tensor out = out_.unpack(*this);
    Tensor grad_x = empty_like(out);
    if (kind_ == SoftmaxKind::softmax) kernels::softmax_backward(grad, out, dim_, grad_x);
    else kernels::log_softmax_backward(grad, out, dim_, grad_x);
    return {grad_x};
  }
  std::string name() const override {
    return kind_ == SoftmaxKind::softmax ? "SoftmaxBackward" : "LogSoftmaxBackward";
  }
  void release_saved() override { out_.reset(); }

 private:
  SoftmaxKind kind_;
  SavedTensor out_;
  int64_t dim_;
};

Tensor softmax_op(SoftmaxKind kind, const char* op, const Tensor& x, int64_t dim) {
  autograd::check_floating(op, x);
  // A 0-d tensor is one row of one element, as in PyTorch (dim 0 or -1).
  const int64_t d = normalize_dim(dim, std::max<int64_t>(x.dim(), 1), op);
  Tensor out = empty_like(x);
  if (kind == SoftmaxKind::softmax) kernels::softmax_forward(detail::dense(x), d, out);
  else kernels::log_softmax_forward(detail::dense(x), d, out);
  if (autograd::needs_grad({x})) autograd::record(std::make_shared<SoftmaxBackward>(kind, out, d), {x}, {out});
  return out;
}

// Keeps the log-probabilities: the gradient is softmax - one_hot, and softmax = exp(log_probs).
class CrossEntropyBackward final : public Node {
 public:
  CrossEntropyBackward(const Tensor& log_probs, const Tensor& target) : log_probs_(log_probs), target_(target) {}

  TensorList apply(TensorList&& grads) override {
    if (!grads.at(0).defined()) return {Tensor()};
    const Tensor grad = detail::dense(grads[0]);
    const Tensor log_probs = log_probs_.unpack(*this);
    Tensor grad_logits = empty_like(log_probs);
    kernels::cross_entropy_backward(grad, log_probs, target_.unpack(*this), grad_logits);
    return {grad_logits};
  }
  std::string name() const override { return "CrossEntropyBackward"; }
  void release_saved() override {
    log_probs_.reset();
    target_.reset();
  }

 private:
  SavedTensor log_probs_, target_;
};

void check_cross_entropy(const Tensor& logits, const Tensor& target) {
  const char* op = "cross_entropy";
  autograd::check_floating(op, logits);
  autograd::check_same_device(op, logits, target);
  DUET_CHECK(logits.dim() == 2, op, ": expected logits of shape [N, C], got ", logits.describe());
  DUET_CHECK(target.dtype() == DType::i64, op, ": expected target of dtype i64 (class indices), got ",
             target.describe());
  DUET_CHECK(target.dim() == 1 && target.size(0) == logits.size(0), op, ": target ", target.describe(),
             " does not match logits ", logits.describe(), ": expected shape [", logits.size(0), "]");
  DUET_CHECK(logits.size(1) >= 1, op, ": logits ", logits.describe(), " have no classes");
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_op(SoftmaxKind::softmax, "softmax", x, dim); }

Tensor log_softmax(const Tensor& x, int64_t dim) {
  return softmax_op(SoftmaxKind::log_softmax, "log_softmax", x, dim);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction reduction) {
  check_cross_entropy(logits, target);
  Tensor losses = empty({logits.size(0)}, autograd::options_of(logits));
  Tensor log_probs = empty_like(logits);
  const Tensor target_data = detail::dense(target);
  // The kernel checks every target is in [0, C), naming the first bad one and its index.
  kernels::cross_entropy_forward(detail::dense(logits), target_data, losses, log_probs);
  if (autograd::needs_grad({logits})) {
    autograd::record(std::make_shared<CrossEntropyBackward>(log_probs, target_data), {logits}, {losses});
  }
  return detail::reduce_loss(losses, reduction);
}

}  // namespace duet::nn::functional
