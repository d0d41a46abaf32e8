// conv2d: input checks, the kernel call, and its backward node.
#include <string>

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

// Saves x only when the weight needs a gradient and the weight only when x does: each
// gradient reads the other operand.
class Conv2dBackward final : public Node {
 public:
  Conv2dBackward(const Tensor& x, const Tensor& weight, bool x_needs, bool weight_needs,
                 const kernels::Conv2dGeometry& geometry)
      : geometry_(geometry), x_shape_(x.sizes()), weight_shape_(weight.sizes()) {
    if (weight_needs) x_ = SavedTensor(x);
    if (x_needs) weight_ = SavedTensor(weight);
  }

  TensorList apply(TensorList&& grads) override {
    if (!grads.at(0).defined()) return {Tensor(), Tensor(), Tensor()};
    const Tensor grad = detail::dense(grads[0]);
    Tensor grad_x, grad_weight, grad_bias;
    if (autograd::input_needs_grad(*this, 0)) {
      grad_x = empty(x_shape_, autograd::options_of(grad));
      kernels::conv2d_backward_input(grad, weight_.unpack(*this), geometry_, grad_x);
    }
    const bool bias_needs = autograd::input_needs_grad(*this, 2);
    if (autograd::input_needs_grad(*this, 1)) {
      // The bias gradient comes with the weight's, from one pass over grad where the kernel can.
      grad_weight = empty(weight_shape_, autograd::options_of(grad));
      if (bias_needs) grad_bias = empty({weight_shape_[0]}, autograd::options_of(grad));
      kernels::conv2d_backward_weight(grad, x_.unpack(*this), geometry_, grad_weight, grad_bias);
    } else if (bias_needs) {
      grad_bias = sum(grad, {0, 2, 3});
    }
    return {grad_x, grad_weight, grad_bias};
  }
  std::string name() const override { return "Conv2dBackward"; }
  void release_saved() override {
    x_.reset();
    weight_.reset();
  }

 private:
  kernels::Conv2dGeometry geometry_;
  Shape x_shape_, weight_shape_;
  SavedTensor x_, weight_;
};

// The fused op's backward computes the convolution again, so it keeps x, the weight and the bias
// (not the convolution's output, which is the point).
class Conv2dAvgPool2dBackward final : public Node {
 public:
  Conv2dAvgPool2dBackward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                          const kernels::Conv2dGeometry& conv, std::optional<kernels::UnaryOp> activation,
                          const kernels::Pool2dGeometry& pool)
      : x_(x), weight_(weight), bias_(bias), conv_(conv), activation_(activation), pool_(pool) {}

  TensorList apply(TensorList&& grads) override {
    if (!grads.at(0).defined()) return {Tensor(), Tensor(), Tensor()};
    const Tensor grad = detail::dense(grads[0]);
    const Tensor x = x_.unpack(*this), weight = weight_.unpack(*this), bias = bias_.unpack(*this);
    Tensor grad_x, grad_weight, grad_bias;
    if (autograd::input_needs_grad(*this, 0)) grad_x = empty(x.sizes(), autograd::options_of(grad));
    if (autograd::input_needs_grad(*this, 1)) grad_weight = empty(weight.sizes(), autograd::options_of(grad));
    if (autograd::input_needs_grad(*this, 2)) grad_bias = empty(bias.sizes(), autograd::options_of(grad));
    kernels::conv2d_avg_pool2d_backward(grad, x, weight, bias, conv_, activation_, pool_, grad_x, grad_weight,
                                        grad_bias);
    return {grad_x, grad_weight, grad_bias};
  }
  std::string name() const override {
    const std::string activation = activation_ ? kernels::name(*activation_) : "";
    return "Conv2d" + autograd::backward_name((activation + "AvgPool2d").c_str());  // Conv2dReluAvgPool2dBackward
  }
  void release_saved() override {
    x_.reset();
    weight_.reset();
    bias_.reset();
  }

 private:
  SavedTensor x_, weight_, bias_;
  kernels::Conv2dGeometry conv_;
  std::optional<kernels::UnaryOp> activation_;
  kernels::Pool2dGeometry pool_;
};

kernels::Conv2dGeometry geometry_of(const Conv2dParams& params) {
  return {.stride = params.stride, .padding = params.padding, .dilation = params.dilation, .groups = params.groups};
}

void check_conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dParams& params) {
  const char* op = "conv2d";
  autograd::check_floating(op, x);
  autograd::check_compatible(op, x, weight);
  if (bias.defined()) autograd::check_compatible(op, x, bias);
  detail::check_rank(op, "input", x, 4, "[N, C, H, W]");
  detail::check_rank(op, "weight", weight, 4, "[out_channels, in_channels / groups, kh, kw]");
  const int64_t groups = params.groups;
  DUET_CHECK(groups >= 1, op, ": expected groups >= 1, got ", groups);
  DUET_CHECK(x.size(1) % groups == 0, op, ": in_channels ", x.size(1), " is not divisible by groups ", groups,
             " (input ", x.describe(), ")");
  DUET_CHECK(weight.size(0) % groups == 0, op, ": out_channels ", weight.size(0), " is not divisible by groups ",
             groups, " (weight ", weight.describe(), ")");
  if (groups == 1) {
    DUET_CHECK(x.size(1) == weight.size(1), op, ": input ", x.describe(), " has ", x.size(1), " channels but weight ",
               weight.describe(), " expects ", weight.size(1));
  } else {
    DUET_CHECK(x.size(1) == weight.size(1) * groups, op, ": input ", x.describe(), " has ", x.size(1),
               " channels but weight ", weight.describe(), " with groups ", groups, " expects ",
               weight.size(1) * groups, " (", weight.size(1), " per group)");
  }
  DUET_CHECK(weight.numel() > 0, op, ": weight ", weight.describe(), " is empty");
  DUET_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0)), op, ": bias ", bias.describe(),
             " does not match the ", weight.size(0), " output channels of weight ", weight.describe());
  const PerAxis stride = params.stride, padding = params.padding, dilation = params.dilation;
  DUET_CHECK(stride.h >= 1 && stride.w >= 1 && padding.h >= 0 && padding.w >= 0 && dilation.h >= 1 && dilation.w >= 1,
             op, ": expected stride >= 1, padding >= 0 and dilation >= 1, got stride ", stride, ", padding ", padding,
             " and dilation ", dilation);
  // The kernel's taps span dilation * (k - 1) + 1 input positions.
  const int64_t span_h = dilation.h * (weight.size(2) - 1) + 1, span_w = dilation.w * (weight.size(3) - 1) + 1;
  const bool dilated = dilation != PerAxis(1);
  DUET_CHECK(x.size(2) + 2 * padding.h >= span_h && x.size(3) + 2 * padding.w >= span_w, op, ": kernel ",
             weight.size(2), "x", weight.size(3),
             dilated ? ::duet::detail::concat(" with dilation ", dilation, " (spanning ", span_h, "x", span_w, ")")
                     : std::string(),
             " is larger than input ", x.describe(), " with padding ", padding);
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Conv2dParams params) {
  check_conv2d(x, weight, bias, params);
  const kernels::Conv2dGeometry geometry = geometry_of(params);
  const PerAxis out_size =
      kernels::conv2d_output_size(geometry, {x.size(2), x.size(3)}, {weight.size(2), weight.size(3)});
  Tensor out = empty({x.size(0), weight.size(0), out_size.h, out_size.w}, autograd::options_of(x));
  const Tensor x_data = detail::dense(x), weight_data = detail::dense(weight);
  kernels::conv2d_forward(x_data, weight_data, detail::dense(bias), geometry, out);
  if (autograd::needs_grad({x, weight, bias})) {
    auto node =
        std::make_shared<Conv2dBackward>(x_data, weight_data, x.requires_grad(), weight.requires_grad(), geometry);
    autograd::record(node, {x, weight, bias}, {out});
  }
  return out;
}

Tensor conv2d_activated_avg_pool2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Conv2dParams conv,
                                   std::optional<kernels::UnaryOp> activation, Pool2dParams pool) {
  check_conv2d(x, weight, bias, conv);
  const kernels::Conv2dGeometry geometry = geometry_of(conv);
  const PerAxis conv_size =
      kernels::conv2d_output_size(geometry, {x.size(2), x.size(3)}, {weight.size(2), weight.size(3)});
  const Shape conv_shape{x.size(0), weight.size(0), conv_size.h, conv_size.w};
  const detail::PoolPlan plan = detail::plan_pool(
      "avg_pool2d", conv_shape, ::duet::detail::concat("the convolution's output ", conv_shape), pool);
  Tensor out = empty(plan.out_shape, autograd::options_of(x));
  const Tensor x_data = detail::dense(x), weight_data = detail::dense(weight), bias_data = detail::dense(bias);
  kernels::conv2d_avg_pool2d_forward(x_data, weight_data, bias_data, geometry, activation, plan.window, out);
  if (autograd::needs_grad({x, weight, bias})) {
    auto node =
        std::make_shared<Conv2dAvgPool2dBackward>(x_data, weight_data, bias_data, geometry, activation, plan.window);
    autograd::record(node, {x, weight, bias}, {out});
  }
  return out;
}

}  // namespace duet::nn::functional
