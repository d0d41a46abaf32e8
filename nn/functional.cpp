// The nn::functional ops composed of existing differentiable ops (linear, dropout, mse_loss),
// and the loss reduction they share with cross_entropy. The ops with their own kernels live in
// functional_conv.cpp, functional_pool.cpp, functional_norm.cpp and functional_softmax.cpp.
#include "duet/nn/functional.h"
#include "duet/autograd/checks.h"
#include "duet/autograd/factory.h"
#include "duet/autograd/op_helpers.h"
#include "duet/autograd/ops.h"
#include "duet/nn/functional_detail.h"

namespace duet::nn::functional {

namespace detail {

Tensor reduce_loss(const Tensor& losses, Reduction reduction) {
  switch (reduction) {
    case Reduction::mean:
      return mean(losses);
    case Reduction::sum:
      return sum(losses);
    case Reduction::none:
      return losses;
  }
  DUET_FAIL("unknown reduction ", static_cast<int>(reduction));
}

}  // namespace detail

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const char* op = "linear";
  autograd::check_floating(op, x);
  autograd::check_compatible(op, x, weight);
  detail::check_rank(op, "weight", weight, 2, "[out_features, in_features]");
  DUET_CHECK(x.dim() >= 1, op, ": expected input of shape [..., in_features], got ", x.describe());
  DUET_CHECK(x.size(-1) == weight.size(1), op, ": input ", x.describe(), " has ", x.size(-1), " features but weight ",
             weight.describe(), " expects ", weight.size(1));
  Tensor out = matmul(x, weight.t());
  if (!bias.defined()) return out;
  autograd::check_compatible(op, x, bias);
  DUET_CHECK(bias.dim() == 1 && bias.size(0) == weight.size(0), op, ": bias ", bias.describe(), " does not match the ",
             weight.size(0), " outputs of weight ", weight.describe());
  return out + bias;
}

Tensor dropout(const Tensor& x, double p, bool training, Generator* generator) {
  const char* op = "dropout";
  autograd::check_defined(op, x);
  DUET_CHECK(p >= 0 && p <= 1, op, ": probability p must be in [0, 1], got ", p);
  if (!training || p == 0) return x;
  autograd::check_floating(op, x);
  if (p == 1) return x * 0.0;  // every element dropped; 1 / (1 - p) would be infinite
  // The mask does not depend on x, so it is no part of the graph; only x * mask is.
  Tensor keep = ge(rand(x.sizes(), autograd::options_of(x), generator), scalar_like(p, x));
  return x * (keep.to(x.dtype()) * (1.0 / (1.0 - p)));
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  const char* op = "mse_loss";
  autograd::check_floating(op, input);
  autograd::check_compatible(op, input, target);
  DUET_CHECK(input.sizes() == target.sizes(), op, ": input ", input.describe(), " and target ", target.describe(),
             " differ in shape");
  Tensor diff = input - target;
  return detail::reduce_loss(diff * diff, reduction);
}

}  // namespace duet::nn::functional
