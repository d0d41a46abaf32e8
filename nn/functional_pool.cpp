// Pooling ops: max_pool2d, avg_pool2d, adaptive_avg_pool2d, adaptive_max_pool2d and their
// backward nodes.
#include <optional>

#include "duet/autograd/checks.h"
#include "duet/autograd/factory.h"
#include "duet/autograd/function.h"
#include "duet/autograd/op_helpers.h"
#include "duet/kernels/nn_kernels.h"
#include "duet/kernels/nn_layouts.h"
#include "duet/nn/functional.h"
#include "duet/nn/functional_detail.h"

namespace duet::nn::functional {
namespace {

using autograd::Node;
using autograd::SavedTensor;
using autograd::TensorList;

// Max pooling's gradient (sliding or adaptive) goes to the saved position of each maximum.
class MaxPool2dBackward final : public Node {
 public:
  // window: the sliding window, or none for adaptive pooling.
  MaxPool2dBackward(const Tensor& indices, Shape input_shape, std::optional<kernels::Pool2dGeometry> window)
      : indices_(indices), input_shape_(std::move(input_shape)), window_(window) {}

  TensorList apply(TensorList&& grads) override {
    if (!grads.at(0).defined()) return {Tensor()};
    const Tensor grad = detail::dense(grads[0]);
    Tensor grad_x = empty(input_shape_, autograd::options_of(grad));
    kernels::max_pool2d_backward(grad, indices_.unpack(*this), window_, grad_x);
    return {grad_x};
  }
  std::string name() const override { return window_ ? "MaxPool2dBackward" : "AdaptiveMaxPool2dBackward"; }
  void release_saved() override { indices_.reset(); }

 private:
  SavedTensor indices_;
  Shape input_shape_;
  std::optional<kernels::Pool2dGeometry> window_;
};

// Average pooling (sliding or adaptive) needs only the geometry: each input pixel gets its
// windows' gradients over their divisors. With an activation before it (activated_avg_pool2d),
// that sum goes through the activation's derivative at the saved input.
class AvgPool2dBackward final : public Node {
 public:
  // window: the sliding window, or none for adaptive pooling.
  AvgPool2dBackward(std::optional<kernels::Pool2dGeometry> window, Shape input_shape,
                    std::optional<kernels::UnaryOp> activation = std::nullopt, const Tensor& input = Tensor())
      : window_(window), input_shape_(std::move(input_shape)), activation_(activation) {
    if (activation) input_ = SavedTensor(input);
  }

  TensorList apply(TensorList&& grads) override {
    if (!grads.at(0).defined()) return {Tensor()};
    const Tensor grad = detail::dense(grads[0]);
    Tensor grad_x = empty(input_shape_, autograd::options_of(grad));
    if (window_) {
      const Tensor input = activation_ ? input_.unpack(*this) : Tensor();
      kernels::avg_pool2d_backward(grad, input, *window_, activation_, grad_x);
    } else {
      kernels::adaptive_avg_pool2d_backward(grad, grad_x);
    }
    return {grad_x};
  }
  std::string name() const override {
    if (activation_) return autograd::backward_name((std::string(kernels::name(*activation_)) + "AvgPool2d").c_str());
    return window_ ? "AvgPool2dBackward" : "AdaptiveAvgPool2dBackward";
  }
  void release_saved() override { input_.reset(); }

 private:
  std::optional<kernels::Pool2dGeometry> window_;
  Shape input_shape_;
  std::optional<kernels::UnaryOp> activation_;
  SavedTensor input_;  // activation_'s input, when there is one
};

void check_pool_input(const char* op, const Tensor& x) {
  autograd::check_floating(op, x);
  detail::check_rank(op, "input", x, 4, "[N, C, H, W]");
  // An empty plane would leave every window empty, with no value (or position) to pool.
  DUET_CHECK(x.size(2) >= 1 && x.size(3) >= 1, op, ": input ", x.describe(), " has empty planes");
}

using detail::PoolPlan;

PoolPlan plan_pool(const char* op, const Tensor& x, const Pool2dParams& params) {
  check_pool_input(op, x);
  return detail::plan_pool(op, x.sizes(), "input " + x.describe(), params);
}
Shape adaptive_out_shape(const char* op, const Tensor& x, PerAxis output_size) {
  check_pool_input(op, x);
  DUET_CHECK(output_size.h >= 1 && output_size.w >= 1, op, ": expected output_size >= 1, got ", output_size);
  return {x.size(0), x.size(1), output_size.h, output_size.w};
}

// Records max pooling's backward node on out, which routes the gradient to `indices`.
Tensor record_max(const Tensor& x, const Tensor& out, const Tensor& indices,
                  std::optional<kernels::Pool2dGeometry> window) {
  if (autograd::needs_grad({x})) {
    autograd::record(std::make_shared<MaxPool2dBackward>(indices, x.sizes(), window), {x}, {out});
  }
  return out;
}

}  // namespace

Tensor max_pool2d(const Tensor& x, Pool2dParams params) {
  const char* op = "max_pool2d";
  DUET_CHECK(params.count_include_pad, op, ": count_include_pad applies to avg_pool2d only");
  DUET_CHECK(params.divisor_override == 0, op, ": divisor_override applies to avg_pool2d only");
  const PoolPlan plan = plan_pool(op, x, params);
  Tensor out = empty(plan.out_shape, autograd::options_of(x));
  Tensor indices = empty(plan.out_shape, autograd::options_of(x, DType::i64));
  kernels::max_pool2d_forward(detail::dense(x), plan.window, out, indices);
  return record_max(x, out, indices, plan.window);
}

Tensor avg_pool2d(const Tensor& x, Pool2dParams params) { return activated_avg_pool2d(x, std::nullopt, params); }

Tensor max_pool2d(const Tensor& x, PerAxis kernel_size, PerAxis stride, PerAxis padding) {
  return max_pool2d(x, {.kernel = kernel_size, .stride = stride, .padding = padding});
}

Tensor avg_pool2d(const Tensor& x, PerAxis kernel_size, PerAxis stride, PerAxis padding) {
  return avg_pool2d(x, {.kernel = kernel_size, .stride = stride, .padding = padding});
}

Tensor activated_avg_pool2d(const Tensor& x, std::optional<kernels::UnaryOp> activation, Pool2dParams params) {
  DUET_CHECK(params.dilation == PerAxis(1), "avg_pool2d: dilation applies to max_pool2d only, got ", params.dilation);
  const PoolPlan plan = plan_pool("avg_pool2d", x, params);
  Tensor out = empty(plan.out_shape, autograd::options_of(x));
  const Tensor input = detail::dense(x);
  kernels::avg_pool2d_forward(input, plan.window, activation, out);
  if (autograd::needs_grad({x})) {
    autograd::record(std::make_shared<AvgPool2dBackward>(plan.window, x.sizes(), activation, input), {x}, {out});
  }
  return out;
}

namespace detail {

PoolPlan plan_pool(const char* op, const Shape& in, const std::string& what, const Pool2dParams& params) {
  const PerAxis kernel = params.kernel, padding = params.padding, dilation = params.dilation;
  const PerAxis stride{params.stride.h == 0 ? kernel.h : params.stride.h,
                       params.stride.w == 0 ? kernel.w : params.stride.w};
  DUET_CHECK(kernel.h >= 1 && kernel.w >= 1 && stride.h >= 1 && stride.w >= 1, op,
             ": expected kernel >= 1 and stride >= 0, got kernel ", kernel, " and stride ", params.stride);
  // Wider padding would give windows that lie wholly in the padding (PyTorch's rule too).
  DUET_CHECK(padding.h >= 0 && padding.w >= 0 && 2 * padding.h <= kernel.h && 2 * padding.w <= kernel.w, op,
             ": padding ", padding, " must be between 0 and half the kernel size ", kernel);
  DUET_CHECK(dilation.h >= 1 && dilation.w >= 1, op, ": expected dilation >= 1, got ", dilation);
  const kernels::Pool2dGeometry window{.kernel = kernel,
                                       .stride = stride,
                                       .padding = padding,
                                       .ceil_mode = params.ceil_mode,
                                       .count_include_pad = params.count_include_pad,
                                       .dilation = dilation,
                                       .divisor_override = params.divisor_override};
  const PerAxis out = kernels::pool2d_output_size(window, {in[2], in[3]});
  DUET_CHECK(out.h >= 1 && out.w >= 1, op, ": kernel ", kernel, " with padding ", padding,
             dilation == PerAxis(1) ? "" : duet::detail::concat(" and dilation ", dilation), " is larger than ", what);
  const kernels::AxisWindows rows =
      kernels::AxisWindows::sliding(in[2], out.h, kernel.h, stride.h, padding.h, true, dilation.h);
  const kernels::AxisWindows cols =
      kernels::AxisWindows::sliding(in[3], out.w, kernel.w, stride.w, padding.w, true, dilation.w);
  DUET_CHECK(rows.windows_hold_input() && cols.windows_hold_input(), op, ": with kernel ", kernel, ", padding ",
             padding, " and dilation ", dilation, " a window of ", what, " has all its taps in the padding");
  return {window, {in[0], in[1], out.h, out.w}};
}

}  // namespace detail

Tensor adaptive_avg_pool2d(const Tensor& x, PerAxis output_size) {
  Tensor out = empty(adaptive_out_shape("adaptive_avg_pool2d", x, output_size), autograd::options_of(x));
  kernels::adaptive_avg_pool2d_forward(detail::dense(x), out);
  if (autograd::needs_grad({x})) {
    autograd::record(std::make_shared<AvgPool2dBackward>(std::nullopt, x.sizes()), {x}, {out});
  }
  return out;
}

Tensor adaptive_max_pool2d(const Tensor& x, PerAxis output_size) {
  const Shape out_shape = adaptive_out_shape("adaptive_max_pool2d", x, output_size);
  Tensor out = empty(out_shape, autograd::options_of(x));
  Tensor indices = empty(out_shape, autograd::options_of(x, DType::i64));
  kernels::adaptive_max_pool2d_forward(detail::dense(x), out, indices);
  return record_max(x, out, indices, std::nullopt);
}

}  // namespace duet::nn::functional
