// softmax, log_softmax and the fused cross_entropy, with their backward nodes.
#include <algorithm>

#include "duet/autograd/checks.h"
#include "duet/autograd/factory.h"
#include "duet/autograd/function.h"
#include "duet/autograd/op_helpers.h"
#include "duet/autograd/ops.h"
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
  std::string name() const override { return kind_ == SoftmaxKind::softmax ? "SoftmaxBackward" : "LogSoftmaxBackward"; }
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

// Keeps the log-probabilities: the gradient is built from softmax = exp(log_probs).
class CrossEntropyBackward final : public Node {
 public:
  CrossEntropyBackward(const Tensor& log_probs, const Tensor& target, const Tensor& weight,
                       const kernels::CrossEntropyTerms& terms)
      : log_probs_(log_probs), target_(target), terms_(terms) {
    if (weight.defined()) weight_ = SavedTensor(weight);
  }

  TensorList apply(TensorList&& grads) override {
    if (!grads.at(0).defined()) return {Tensor()};
    const Tensor grad = detail::dense(grads[0]);
    const Tensor log_probs = log_probs_.unpack(*this);
    const Tensor weight = weight_.defined() ? weight_.unpack(*this) : Tensor();
    Tensor grad_logits = empty_like(log_probs);
    kernels::cross_entropy_backward(grad, log_probs, target_.unpack(*this), weight, terms_, grad_logits);
    return {grad_logits};
  }
  std::string name() const override { return "CrossEntropyBackward"; }
  void release_saved() override {
    log_probs_.reset();
    target_.reset();
    weight_.reset();
  }

 private:
  SavedTensor log_probs_, target_, weight_;
  kernels::CrossEntropyTerms terms_;
};

// logits [N, C, d1, ...] with target [N, d1, ...], or one sample's [C] with a 0-d target.
void check_cross_entropy(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& options) {
  const char* op = "cross_entropy";
  autograd::check_floating(op, logits);
  autograd::check_same_device(op, logits, target);
  DUET_CHECK(logits.dim() >= 1, op, ": expected logits of shape [N, C], [N, C, d1, ...] or [C], got ",
             logits.describe());
  DUET_CHECK(target.dtype() == DType::i64, op, ": expected target of dtype i64 (class indices), got ",
             target.describe());
  const int64_t class_dim = logits.dim() == 1 ? 0 : 1;
  Shape expected = logits.sizes();
  expected.erase(expected.begin() + class_dim);
  DUET_CHECK(target.sizes() == expected, op, ": target ", target.describe(), " does not match logits ",
             logits.describe(), ": expected shape ", shape_str(expected));
  DUET_CHECK(logits.size(class_dim) >= 1, op, ": logits ", logits.describe(), " have no classes");
  if (const Tensor& w = options.weight; w.defined()) {
    autograd::check_compatible(op, logits, w);
    DUET_CHECK(w.dim() == 1 && w.size(0) == logits.size(class_dim), op, ": weight ", w.describe(),
               " does not match the ", logits.size(class_dim), " classes of logits ", logits.describe(),
               " (expected shape [", logits.size(class_dim), "])");
    // PyTorch computes no gradient for the weights either (it fails in backward); duet says so here.
    DUET_CHECK(!w.requires_grad(), op, ": weight ", w.describe(),
               " requires grad, but cross_entropy gives the class weights no gradient (as PyTorch); pass "
               "weight.detach()");
  }
  DUET_CHECK(options.label_smoothing >= 0 && options.label_smoothing <= 1, op,
             ": label_smoothing must be in [0, 1], got ", options.label_smoothing);
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_op(SoftmaxKind::softmax, "softmax", x, dim); }

Tensor log_softmax(const Tensor& x, int64_t dim) { return softmax_op(SoftmaxKind::log_softmax, "log_softmax", x, dim); }

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& options) {
  check_cross_entropy(logits, target, options);
  if (logits.dim() == 1) {  // one sample: a batch of one, and its 0-d loss
    Tensor loss = cross_entropy(logits.unsqueeze(0), target.unsqueeze(0), options);
    return options.reduction == Reduction::none ? loss.squeeze(0) : loss;
  }
  const kernels::CrossEntropyTerms terms{.ignore_index = options.ignore_index,
                                         .label_smoothing = options.label_smoothing};
  Tensor losses = empty(target.sizes(), autograd::options_of(logits));
  Tensor log_probs = empty_like(logits);
  Tensor total_weight = empty({}, autograd::options_of(logits));
  const Tensor target_data = detail::dense(target), weight_data = detail::dense(options.weight);
  // The kernel checks every target is a class or ignore_index, naming the first bad one.
  kernels::cross_entropy_forward(detail::dense(logits), target_data, weight_data, terms, losses, log_probs,
                                 total_weight);
  if (autograd::needs_grad({logits})) {
    autograd::record(std::make_shared<CrossEntropyBackward>(log_probs, target_data, weight_data, terms), {logits},
                     {losses});
  }
  if (options.reduction == Reduction::mean) {
    // The training hot path, unweighted with nothing ignored, keeps the plain mean's one
    // reduction where the divisor is already on the host. On a GPU reading it would wait, so the
    // weighted mean's division (ignored rows left out, the count when unweighted) runs there.
    if (!options.weight.defined() && total_weight.device().is_cpu()) {
      const double total =
          total_weight.dtype() == DType::f32 ? total_weight.item<float>() : total_weight.item<double>();
      if (total == static_cast<double>(losses.numel())) return mean(losses);
    }
    return sum(losses) / total_weight;
  }
  return detail::reduce_loss(losses, options.reduction);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction reduction) {
  CrossEntropyOptions options;
  options.reduction = reduction;
  return cross_entropy(logits, target, options);
}

}  // namespace duet::nn::functional

namespace duet {

// Tensor's method twins (core/tensor.h) of the two ops above, here beside them.
Tensor Tensor::softmax(int64_t dim) const { return nn::functional::softmax(*this, dim); }
Tensor Tensor::log_softmax(int64_t dim) const { return nn::functional::log_softmax(*this, dim); }

}  // namespace duet
