// batch_norm: input checks, the running-statistics update, and the backward node.
#include <algorithm>
#include <utility>

#include "duet/autograd/checks.h"
#include "duet/autograd/factory.h"
#include "duet/autograd/function.h"
#include "duet/autograd/grad_mode.h"
#include "duet/autograd/op_helpers.h"
#include "duet/kernels/nn_kernels.h"
#include "duet/nn/functional.h"
#include "duet/nn/functional_detail.h"

namespace duet::nn::functional {
namespace {

using autograd::Node;
using autograd::SavedTensor;
using autograd::TensorList;

// Keeps the statistics the forward pass normalised with (batch or running, as copies), so a
// later update of the running statistics cannot change this gradient.
class BatchNormBackward final : public Node {
 public:
  BatchNormBackward(const Tensor& x, const Tensor& weight, const Tensor& save_mean, const Tensor& save_invstd,
                    bool training)
      : x_(x), mean_(save_mean), invstd_(save_invstd), training_(training) {
    if (weight.defined()) weight_ = SavedTensor(weight);
  }

  TensorList apply(TensorList&& grads) override {
    if (!grads.at(0).defined()) return {Tensor(), Tensor(), Tensor()};
    const Tensor grad = detail::dense(grads[0]);
    const Tensor x = x_.unpack(*this), mean = mean_.unpack(*this);
    const Tensor weight = weight_.defined() ? weight_.unpack(*this) : Tensor();
    Tensor grad_x = autograd::input_needs_grad(*this, 0) ? empty_like(x) : Tensor();
    Tensor grad_weight = autograd::input_needs_grad(*this, 1) ? empty_like(mean) : Tensor();
    Tensor grad_bias = autograd::input_needs_grad(*this, 2) ? empty_like(mean) : Tensor();
    kernels::batch_norm_backward(grad, x, weight, mean, invstd_.unpack(*this), training_, grad_x, grad_weight,
                                 grad_bias);
    return {grad_x, grad_weight, grad_bias};
  }
  std::string name() const override { return "BatchNormBackward"; }
  void release_saved() override {
    x_.reset();
    weight_.reset();
    mean_.reset();
    invstd_.reset();
  }

 private:
  SavedTensor x_, weight_, mean_, invstd_;
  bool training_;
};

// weight, bias and the running statistics: on x's device and dtype, one value per channel.
void check_per_channel(const char* op, const char* what, const Tensor& t, const Tensor& x) {
  if (!t.defined()) return;
  autograd::check_compatible(op, x, t);
  DUET_CHECK(t.dim() == 1 && t.size(0) == x.size(1), op, ": ", what, " ", t.describe(), " does not match the ",
             x.size(1), " channels of input ", x.describe(), " (expected shape [", x.size(1), "])");
}

void check_batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                      const Tensor& running_var, bool training, double momentum, double eps) {
  const char* op = "batch_norm";
  autograd::check_floating(op, x);
  DUET_CHECK(x.dim() == 2 || x.dim() == 4, op, ": expected input of shape [N, C] or [N, C, H, W], got ", x.describe());
  check_per_channel(op, "weight", weight, x);
  check_per_channel(op, "bias", bias, x);
  check_per_channel(op, "running_mean", running_mean, x);
  check_per_channel(op, "running_var", running_var, x);
  DUET_CHECK(running_mean.defined() == running_var.defined(), op,
             ": give both running_mean and running_var, or neither; got ", detail::describe_or_none(running_mean),
             " and ", detail::describe_or_none(running_var));
  DUET_CHECK(training || running_mean.defined(), op, ": running_mean and running_var are required when not training");
  DUET_CHECK(!running_mean.defined() || (!running_mean.requires_grad() && !running_var.requires_grad()), op,
             ": the running statistics are buffers and must not require grad");
  DUET_CHECK(eps > 0 && momentum >= 0 && momentum <= 1, op, ": expected eps > 0 and momentum in [0, 1], got eps ", eps,
             " and momentum ", momentum);
  DUET_CHECK(!training || x.numel() / std::max<int64_t>(x.size(1), 1) > 1, op,
             ": expected more than 1 value per channel when training, got input ", x.describe());
}

}  // namespace

Tensor batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                  const Tensor& running_var, bool training, double momentum, double eps) {
  check_batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps);
  const Tensor x_data = detail::dense(x), weight_data = detail::dense(weight);
  // The kernel updates the running statistics in place: a strided buffer is updated through a
  // dense copy that is written back.
  const Tensor mean_data = detail::dense(running_mean), var_data = detail::dense(running_var);
  Tensor out = empty_like(x);
  Tensor save_mean = empty({x.size(1)}, autograd::options_of(x));
  Tensor save_invstd = empty({x.size(1)}, autograd::options_of(x));
  kernels::batch_norm_forward(x_data, weight_data, detail::dense(bias), mean_data, var_data, training, momentum, eps,
                              out, save_mean, save_invstd);
  if (training && running_mean.defined()) {
    NoGradGuard no_grad;  // a buffer update, never part of the graph
    for (auto [stat, data] : {std::pair{running_mean, mean_data}, std::pair{running_var, var_data}}) {
      if (data.is_same(stat)) stat.bump_version();
      else stat.copy_(data);
    }
  }
  if (autograd::needs_grad({x, weight, bias})) {
    auto node = std::make_shared<BatchNormBackward>(x_data, weight_data, save_mean, save_invstd, training);
    autograd::record(node, {x, weight, bias}, {out});
  }
  return out;
}

}  // namespace duet::nn::functional
