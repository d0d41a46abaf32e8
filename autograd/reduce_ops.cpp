// Reductions over dims with keepdim: sum, mean, max (amax), amin and min, argmax, argmin,
// logsumexp (var and std: variance_ops.cpp).
//
// The kernels always write the keepdim layout; without keepdim the result is a view of it
// with the reduced dims dropped. One ReduceBackward node serves every reduction whose gradient
// spreads over the reduced elements: it brings the gradient back to the keepdim layout and
// expands it over the input. min along a dim sends it to one index instead (IndexBackward).
#include <algorithm>

#include "duet/autograd/checks.h"
#include "duet/autograd/factory.h"
#include "duet/autograd/function.h"
#include "duet/autograd/op_helpers.h"
#include "duet/autograd/ops.h"
#include "duet/autograd/reduction_plan.h"
#include "duet/kernels/kernels.h"

namespace duet {
namespace {

using autograd::Node;
using autograd::plan_reduction;
using autograd::ReductionPlan;
using autograd::SavedTensor;
using autograd::TensorList;
using kernels::ReduceOp;

// Runs the kernel into a fresh keepdim-layout tensor and views it as the output shape.
Tensor reduce_raw(ReduceOp op, const Tensor& x, const ReductionPlan& r) {
  Tensor out = empty(r.keepdim_shape, autograd::options_of(x, kernels::reduce_output_dtype(op, x.dtype())));
  kernels::reduce(op, x, r.dims, out);
  return out.as_strided(r.out_shape, contiguous_strides(r.out_shape), 0);
}

class ReduceBackward final : public Node {
 public:
  ReduceBackward(ReduceOp op, const Tensor& x, const Tensor& out, ReductionPlan r)
      : op_(op), input_shape_(x.sizes()), reduction_(std::move(r)) {
    if (op == ReduceOp::max || op == ReduceOp::min || op == ReduceOp::logsumexp) {
      input_ = SavedTensor(x);
      output_ = SavedTensor(out);
    }
  }

  TensorList apply(TensorList&& grads) override {
    if (!grads.at(0).defined()) return {Tensor()};
    // The gradient over the input: each output element's gradient, copied to its inputs.
    Tensor grad = keepdim(grads[0]).expand(input_shape_);
    switch (op_) {
      case ReduceOp::sum:
        return {grad};
      case ReduceOp::mean: {
        return {grad * (1.0 / static_cast<double>(std::max<int64_t>(reduction_.count(input_shape_), 1)))};
      }
      case ReduceOp::max:
      case ReduceOp::min: {
        // amax and amin: the gradient is shared evenly among the elements equal to the extremum.
        Tensor x = input_.unpack(*this), out = keepdim(output_.unpack(*this));
        Tensor is_extremum = eq(x, out).to(x.dtype());
        Tensor ties = sum(is_extremum, reduction_.dims, /*keepdim=*/true);
        return {grad * is_extremum / ties};
      }
      case ReduceOp::logsumexp: {
        // d/dx log(sum(exp x)) = softmax(x) = exp(x - logsumexp(x)).
        Tensor x = input_.unpack(*this), out = keepdim(output_.unpack(*this));
        return {grad * exp(x - out)};
      }
      default:
        DUET_FAIL(name(), ": not differentiable");
    }
  }
  std::string name() const override { return autograd::backward_name(kernels::name(op_)); }
  void release_saved() override {
    input_.reset();
    output_.reset();
  }

 private:
  Tensor keepdim(const Tensor& t) const { return t.reshape(reduction_.keepdim_shape); }

  ReduceOp op_;
  Shape input_shape_;
  ReductionPlan reduction_;
  SavedTensor input_, output_;
};

// min along one dim: the gradient goes to the index the forward pass returned, as torch.min(x, dim).
class IndexBackward final : public Node {
 public:
  IndexBackward(const Tensor& indices, Shape input_shape, int64_t dim, ReductionPlan r)
      : indices_(indices), input_shape_(std::move(input_shape)), dim_(dim), reduction_(std::move(r)) {}

  TensorList apply(TensorList&& grads) override {
    if (!grads.at(0).defined()) return {Tensor()};
    Tensor grad = grads[0].reshape(reduction_.keepdim_shape).expand(input_shape_);
    if (input_shape_.empty()) return {grad};  // a 0-d input is its own minimum
    // Each element's position along dim, compared with the chosen index: a one-hot mask.
    Shape position_shape(input_shape_.size(), 1);
    position_shape[static_cast<size_t>(dim_)] = input_shape_[static_cast<size_t>(dim_)];
    Tensor positions =
        arange(static_cast<double>(input_shape_[static_cast<size_t>(dim_)]), autograd::options_of(indices_))
            .reshape(position_shape);
    return {where(eq(positions, indices_), grad, scalar_like(0, grad))};
  }
  std::string name() const override { return "MinBackward"; }

 private:
  Tensor indices_;  // keepdim layout
  Shape input_shape_;
  int64_t dim_;
  ReductionPlan reduction_;
};

// Which dtypes each reduction takes, as PyTorch: sum, max and min take any (a sum of integers is
// i64, so 300 u8 ones sum to 300, not 44); mean of integers is refused, as torch.mean refuses it.
void check_reduction_dtype(ReduceOp op, const Tensor& x) {
  if (is_floating(x.dtype()) || op == ReduceOp::sum || op == ReduceOp::max || op == ReduceOp::min) return;
  DUET_CHECK(op != ReduceOp::mean, "mean: could not infer output dtype: the input must be floating (f32 or f64), got ",
             x.describe(), "; convert it first, e.g. mean(x.to(DType::f32))");
  autograd::check_floating(kernels::name(op), x);
}

Tensor differentiable_reduce(ReduceOp op, const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  const char* op_name = kernels::name(op);
  autograd::check_defined(op_name, x);
  check_reduction_dtype(op, x);
  ReductionPlan r = plan_reduction(op_name, x, std::move(dims), keepdim);
  Tensor out = reduce_raw(op, x, r);
  if (autograd::needs_grad({x})) {
    autograd::record(std::make_shared<ReduceBackward>(op, x, out, std::move(r)), {x}, {out});
  }
  return out;
}

}  // namespace

Tensor sum(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  return differentiable_reduce(ReduceOp::sum, x, std::move(dims), keepdim);
}
Tensor mean(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  return differentiable_reduce(ReduceOp::mean, x, std::move(dims), keepdim);
}
Tensor max(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  return differentiable_reduce(ReduceOp::max, x, std::move(dims), keepdim);
}
Tensor logsumexp(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  return differentiable_reduce(ReduceOp::logsumexp, x, std::move(dims), keepdim);
}

Tensor amin(const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  return differentiable_reduce(ReduceOp::min, x, std::move(dims), keepdim);
}
Tensor min(const Tensor& x) { return amin(x); }

ValuesIndices min(const Tensor& x, int64_t dim, bool keepdim) {
  autograd::check_defined("min", x);
  check_reduction_dtype(ReduceOp::min, x);
  ReductionPlan r = plan_reduction("min", x, {dim}, keepdim);
  // Two passes with one rule (the first minimum; NaN counts as one), so values[i] = x[indices[i]].
  ValuesIndices out{reduce_raw(ReduceOp::min, x, r), reduce_raw(ReduceOp::argmin, x, r)};
  if (autograd::needs_grad({x})) {
    const int64_t d = r.dims.empty() ? 0 : r.dims[0];  // a 0-d x reduces over nothing
    Tensor indices = out.indices.reshape(r.keepdim_shape);
    autograd::record(std::make_shared<IndexBackward>(indices, x.sizes(), d, std::move(r)), {x}, {out.values});
  }
  return out;
}

Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
  autograd::check_defined("argmax", x);
  ReductionPlan r = plan_reduction("argmax", x, {dim}, keepdim);
  return reduce_raw(ReduceOp::argmax, x, r);
}

Tensor argmin(const Tensor& x, int64_t dim, bool keepdim) {
  autograd::check_defined("argmin", x);
  ReductionPlan r = plan_reduction("argmin", x, {dim}, keepdim);
  return reduce_raw(ReduceOp::argmin, x, r);
}

}  // namespace duet

namespace duet::autograd {

int64_t ReductionPlan::count(const Shape& input_shape) const {
  return numel(input_shape) / std::max<int64_t>(numel(keepdim_shape), 1);
}

ReductionPlan plan_reduction(const char* op, const Tensor& x, std::vector<int64_t> dims, bool keepdim) {
  const int64_t ndim = x.dim();
  if (dims.empty()) {
    for (int64_t d = 0; d < ndim; ++d) dims.push_back(d);
  } else {
    for (int64_t& d : dims) d = normalize_dim(d, ndim, op);
    std::sort(dims.begin(), dims.end());
    DUET_CHECK(std::adjacent_find(dims.begin(), dims.end()) == dims.end(), op, ": a dim appears twice in ",
               shape_str(dims), " for ", x.describe());
    if (ndim == 0) dims.clear();  // dim 0 or -1 of a 0-d tensor: the tensor itself
  }
  ReductionPlan r{dims, x.sizes(), {}};
  for (int64_t d : dims) r.keepdim_shape[static_cast<size_t>(d)] = 1;
  for (int64_t d = 0; d < ndim; ++d) {
    bool reduced = std::binary_search(dims.begin(), dims.end(), d);
    if (!reduced || keepdim) r.out_shape.push_back(r.keepdim_shape[static_cast<size_t>(d)]);
  }
  return r;
}

}  // namespace duet::autograd
