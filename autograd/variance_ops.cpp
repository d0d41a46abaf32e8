// var and std over dims, as torch.var and torch.std in 1.13: Bessel's correction when unbiased
// (the default), the divisor max(0, n - correction) (so one element with the correction gives
// NaN, as PyTorch).
//
// Composed from the sub, mean, mul and sum kernels, so it runs on every backend. The values are
// first shifted by each row's first element, then the mean of the shifted row and the squared
// deviations from it are taken (two passes). The shift makes a constant row exactly 0 all the way
// through, as PyTorch's Welford pass does: with the mean of six values of 0.1, which is not 0.1,
// the deviations would be about 1e-17 instead of 0, the std about 1e-17, and its gradient of
// order 1 with a sign set by rounding, where PyTorch gives 0. Elsewhere the two differ only in
// rounding. One node computes PyTorch's gradients directly, from the same deviations:
//   var: (2 / (n - correction)) * grad * (x - mean)
//   std: var's, with grad / (2 * std), taken as 0 where std is 0 (a constant input), not NaN.
#include "duet/autograd/checks.h"
#include "duet/autograd/factory.h"
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
  VarianceBackward(Spread spread, const Tensor& x, const Tensor& shift, const Tensor& shifted_mean, const Tensor& out,
                   int64_t dof, ReductionPlan r)
      : spread_(spread), x_(x), shift_(shift), shifted_mean_(shifted_mean), dof_(dof), reduction_(std::move(r)) {
    if (spread == Spread::std) out_ = SavedTensor(out);
  }

  TensorList apply(TensorList&& grads) override {
    if (!grads.at(0).defined()) return {Tensor()};
    Tensor grad = grads[0].reshape(reduction_.keepdim_shape);
    if (spread_ == Spread::std) {
      const Tensor result = out_.unpack(*this).reshape(reduction_.keepdim_shape);
      grad = where(eq(result, scalar_like(0, result)), scalar_like(0, grad), grad / (result * 2.0));
    }
    // The forward's deviations, bit for bit: exactly 0 on a constant row. 2 / 0 is inf, as
    // PyTorch's: with a deviation of 0 the gradient is then NaN.
    const Tensor deviation = (x_.unpack(*this) - shift_) - shifted_mean_;
    return {(grad * (2.0 / static_cast<double>(dof_))) * deviation};
  }
  std::string name() const override { return spread_ == Spread::var ? "VarBackward" : "StdBackward"; }
  void release_saved() override {
    x_.reset();
    out_.reset();
  }

 private:
  Spread spread_;
  SavedTensor x_, out_;          // out_: std's result, for its gradient
  Tensor shift_, shifted_mean_;  // keepdim layout, made by the forward pass and no one else's
  int64_t dof_;
  ReductionPlan reduction_;
};

// Each row's first element (index 0 along every reduced dim), keepdim layout, a copy of its own;
// zeros for empty rows, which have no first element.
Tensor row_start(const Tensor& x, const std::vector<int64_t>& dims, int64_t n) {
  Shape shape = x.sizes();
  for (int64_t d : dims) shape[static_cast<size_t>(d)] = 1;
  if (n == 0) return zeros(shape, autograd::options_of(x));
  Tensor start = x;
  for (int64_t d : dims) start = start.narrow(d, 0, 1);
  return start.clone();
}

Tensor variance(Spread spread, const Tensor& x, std::vector<int64_t> dims, bool unbiased, bool keepdim) {
  const char* op = spread == Spread::var ? "var" : "std";
  autograd::check_defined(op, x);
  autograd::check_floating(op, x);
  ReductionPlan r = autograd::plan_reduction(op, x, std::move(dims), keepdim);
  const int64_t n = r.count(x.sizes());
  const int64_t dof = n - (unbiased ? 1 : 0);
  Tensor shift, shifted_mean, out;
  {
    NoGradGuard no_grad;
    shift = row_start(x, r.dims, n);
    shifted_mean = mean(x - shift, r.dims, /*keepdim=*/true);
    Tensor deviation = (x - shift) - shifted_mean;
    Tensor result =
        sum(deviation * deviation, r.dims, /*keepdim=*/true) / static_cast<double>(std::max<int64_t>(dof, 0));
    if (spread == Spread::std) result = sqrt(result);
    out = result.reshape(r.out_shape);
  }
  if (autograd::needs_grad({x})) {
    autograd::record(std::make_shared<VarianceBackward>(spread, x, shift, shifted_mean, out, dof, std::move(r)), {x},
                     {out});
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
