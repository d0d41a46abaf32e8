// var and std over dims, as torch.var and torch.std in 1.13: Bessel's correction when unbiased
// (the default), the divisor max(0, n - correction) (so one element with the correction gives
// NaN, as PyTorch).
//
// Composed from the mean, sub, mul and sum kernels (two passes: the mean, then the squared
// deviations), which is exact to a few ulp and runs on every backend; PyTorch's Welford pass
// differs from it only in rounding. One node computes PyTorch's gradients directly:
//   var: (2 / (n - correction)) * grad * (x - mean)
//   std: var's, with grad / (2 * std), taken as 0 where std is 0 (a constant input), not NaN.
#include "duet/autograd/checks.h"
#include "duet/autograd/function.h"
#include "duet/autograd/grad_mode.h"
#include "duet/autograd/op_helpers.h"
#include "duet/autograd/ops.h"
#include "duet/autograd/reduction_plan.h"

namespace duet {
namespace {

using autograd::Node;
using autograd::ReductionPlan;
using autograd::SavedTensor;
using autograd::TensorList;

enum class Spread { var, std };

class VarianceBackward final : public Node {
 public:
  VarianceBackward(Spread spread, const Tensor& x, const Tensor& mean, const Tensor& out, int64_t dof, ReductionPlan r)
      : spread_(spread), x_(x), mean_(mean), dof_(dof), reduction_(std::move(r)) {
    if (spread == Spread::std) out_ = SavedTensor(out);
  }

  TensorList apply(TensorList&& grads) override {
    if (!grads.at(0).defined()) return {Tensor()};
    Tensor grad = grads[0].reshape(reduction_.keepdim_shape);
    if (spread_ == Spread::std) {
      const Tensor result = out_.unpack(*this).reshape(reduction_.keepdim_shape);
      grad = where(eq(result, scalar_like(0, result)), scalar_like(0, grad), grad / (result * 2.0));
    }
    const Tensor x = x_.unpack(*this);
    // 2 / 0 is inf, as PyTorch's: with x - mean = 0 the gradient is then NaN.
    return {(grad * (2.0 / static_cast<double>(dof_))) * (x - mean_)};
  }
  std::string name() const override { return spread_ == Spread::var ? "VarBackward" : "StdBackward"; }
  void release_saved() override {
    x_.reset();
    out_.reset();
  }

 private:
  Spread spread_;
  SavedTensor x_, out_;  // out_: std's result, for its gradient
  Tensor mean_;          // keepdim layout, made by the forward pass and no one else's
  int64_t dof_;
  ReductionPlan reduction_;
};

Tensor variance(Spread spread, const Tensor& x, std::vector<int64_t> dims, bool unbiased, bool keepdim) {
  const char* op = spread == Spread::var ? "var" : "std";
  autograd::check_defined(op, x);
  autograd::check_floating(op, x);
  ReductionPlan r = autograd::plan_reduction(op, x, std::move(dims), keepdim);
  const int64_t n = r.count(x.sizes());
  const int64_t dof = n - (unbiased ? 1 : 0);
  Tensor mean_k, out;
  {
    NoGradGuard no_grad;
    mean_k = mean(x, r.dims, /*keepdim=*/true);
    Tensor deviation = x - mean_k;
    Tensor result =
        sum(deviation * deviation, r.dims, /*keepdim=*/true) / static_cast<double>(std::max<int64_t>(dof, 0));
    if (spread == Spread::std) result = sqrt(result);
    out = result.reshape(r.out_shape);
  }
  if (autograd::needs_grad({x})) {
    autograd::record(std::make_shared<VarianceBackward>(spread, x, mean_k, out, dof, std::move(r)), {x}, {out});
  }
  return out;
}

}  // namespace

Tensor var(const Tensor& x, std::vector<int64_t> dims, bool unbiased, bool keepdim) {
  return variance(Spread::var, x, std::move(dims), unbiased, keepdim);
}

Tensor std(const Tensor& x, std::vector<int64_t> dims, bool unbiased, bool keepdim) {
  return variance(Spread::std, x, std::move(dims), unbiased, keepdim);
}

}  // namespace duet
