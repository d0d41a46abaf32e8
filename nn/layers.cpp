#include "duet/nn/layers.h"

#include <cmath>

#include "duet/autograd/factory.h"
#include "duet/autograd/grad_mode.h"
#include "duet/nn/init.h"

namespace duet::nn {
namespace {

// PyTorch's default for Linear and Conv2d: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias.
Tensor default_init(Shape sizes, int64_t fan_in) {
  Tensor t = empty(std::move(sizes));
  double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  init::uniform_(t, -bound, bound);
  return t;
}

}  // namespace

// ---- Linear ----
LinearImpl::LinearImpl(int64_t in_features, int64_t out_features, bool bias)
    : in_(in_features), out_(out_features), has_bias_(bias) {
  DUET_CHECK(in_features > 0 && out_features > 0, "Linear: features must be positive, got in=", in_features,
             ", out=", out_features);
  weight_ = register_parameter("weight", default_init({out_features, in_features}, in_features));
  if (bias) bias_ = register_parameter("bias", default_init({out_features}, in_features));
}

Tensor LinearImpl::forward(const Tensor& x) { return functional::linear(x, weight(), bias()); }

std::string LinearImpl::name() const {
  return detail::concat("Linear(in=", in_, ", out=", out_, ", bias=", has_bias_ ? "true" : "false", ")");
}

// ---- Conv2d ----
Conv2dImpl::Conv2dImpl(const Conv2dOptions& options) : options_(options) {
  const auto& o = options;
  DUET_CHECK(o.in_channels_ > 0 && o.out_channels_ > 0 && o.groups_ > 0, "Conv2d: in_channels ", o.in_channels_,
             ", out_channels ", o.out_channels_, " and groups ", o.groups_, " must be positive");
  DUET_CHECK(o.kernel_size_.h > 0 && o.kernel_size_.w > 0 && o.stride_.h > 0 && o.stride_.w > 0 && o.dilation_.h > 0 &&
                 o.dilation_.w > 0 && o.padding_.h >= 0 && o.padding_.w >= 0,
             "Conv2d: kernel size ", o.kernel_size_, ", stride ", o.stride_, " and dilation ", o.dilation_,
             " must be positive and padding ", o.padding_, " >= 0");
  DUET_CHECK(o.in_channels_ % o.groups_ == 0, "Conv2d: in_channels ", o.in_channels_, " is not divisible by groups ",
             o.groups_);
  DUET_CHECK(o.out_channels_ % o.groups_ == 0, "Conv2d: out_channels ", o.out_channels_, " is not divisible by groups ",
             o.groups_);
  // Each output reads in_channels / groups channels: PyTorch's fan_in.
  const int64_t group_channels = o.in_channels_ / o.groups_;
  const int64_t fan_in = group_channels * o.kernel_size_.h * o.kernel_size_.w;
  weight_ = register_parameter(
      "weight", default_init({o.out_channels_, group_channels, o.kernel_size_.h, o.kernel_size_.w}, fan_in));
  if (o.bias_) bias_ = register_parameter("bias", default_init({o.out_channels_}, fan_in));
}

functional::Conv2dParams Conv2dImpl::params() const {
  const auto& o = options_;
  return {.stride = o.stride_, .padding = o.padding_, .dilation = o.dilation_, .groups = o.groups_};
}

Tensor Conv2dImpl::forward(const Tensor& x) { return functional::conv2d(x, weight(), bias(), params()); }

std::string Conv2dImpl::name() const {
  const auto& o = options_;
  return detail::concat(
      "Conv2d(", o.in_channels_, ", ", o.out_channels_, ", kernel=", o.kernel_size_, ", stride=", o.stride_,
      ", padding=", o.padding_, o.dilation_ == PerAxis(1) ? "" : detail::concat(", dilation=", o.dilation_),
      o.groups_ == 1 ? "" : detail::concat(", groups=", o.groups_), o.bias_ ? "" : ", bias=false", ")");
}

// ---- pooling ----
std::string pool_name(const char* kind, const functional::Pool2dParams& p) {
  const PerAxis stride{p.stride.h ? p.stride.h : p.kernel.h, p.stride.w ? p.stride.w : p.kernel.w};
  return detail::concat(kind, "(kernel=", p.kernel, ", stride=", stride, ", padding=", p.padding,
                        p.ceil_mode ? ", ceil_mode=true" : "", p.count_include_pad ? "" : ", count_include_pad=false",
                        p.dilation == PerAxis(1) ? "" : detail::concat(", dilation=", p.dilation),
                        p.divisor_override == 0 ? "" : detail::concat(", divisor_override=", p.divisor_override), ")");
}

std::string adaptive_pool_name(const char* kind, PerAxis size) {
  return size.h == size.w ? detail::concat(kind, "(", size.h, ")")
                          : detail::concat(kind, "(", size.h, ", ", size.w, ")");
}

// ---- BatchNorm2d ----
double BatchNormOptions::count_batch(const Tensor& num_batches_tracked) const {
  NoGradGuard no_grad;
  num_batches_tracked.add_(ones_like(num_batches_tracked));
  if (momentum) return *momentum;
  // The cumulative moving average: the n-th batch's statistics weigh 1 / n.
  return 1.0 / static_cast<double>(num_batches_tracked.item<int64_t>());
}

std::string BatchNormOptions::str() const {
  return detail::concat("momentum=", momentum ? detail::concat(*momentum) : "None", ", eps=", eps);
}

void BatchNormOptions::check(const char* layer) const {
  DUET_CHECK(!momentum || (*momentum >= 0 && *momentum <= 1), layer,
             ": momentum must be in [0, 1] or None (the cumulative average), got ", *momentum);
  DUET_CHECK(eps > 0, layer, ": eps must be > 0, got ", eps);
}

BatchNorm2dImpl::BatchNorm2dImpl(int64_t channels, BatchNormOptions options) : channels_(channels), options_(options) {
  DUET_CHECK(channels > 0, "BatchNorm2d: channels must be positive, got ", channels);
  options.check("BatchNorm2d");
  weight_ = register_parameter("weight", ones({channels}));
  bias_ = register_parameter("bias", zeros({channels}));
  mean_ = register_buffer("running_mean", zeros({channels}));
  var_ = register_buffer("running_var", ones({channels}));
  batches_ = register_buffer("num_batches_tracked", zeros({1}, {.dtype = DType::i64}));
}

Tensor BatchNorm2dImpl::forward(const Tensor& x) {
  const double momentum = is_training() ? options_.count_batch(buffer(batches_)) : 0;  // unread when not training
  return functional::batch_norm(x, parameter(weight_), parameter(bias_), buffer(mean_), buffer(var_), is_training(),
                                momentum, options_.eps);
}

std::string BatchNorm2dImpl::name() const {
  return detail::concat("BatchNorm2d(", channels_, ", ", options_.str(), ")");
}

// ---- Dropout ----
DropoutImpl::DropoutImpl(double p) : p_(p) { DUET_CHECK(p >= 0 && p < 1, "Dropout: p must be in [0, 1), got ", p); }

Tensor DropoutImpl::forward(const Tensor& x) { return functional::dropout(x, p_, is_training()); }

std::string DropoutImpl::name() const { return detail::concat("Dropout(p=", p_, ")"); }

// ---- Sequential ----
void SequentialImpl::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(num_children()), std::move(module));
}

Tensor SequentialImpl::forward(const Tensor& x) {
  Tensor out = x;
  for (size_t i = 0; i < num_children(); ++i) out = child(i).forward(out);
  return out;
}

// ---- Residual ----
ResidualImpl::ResidualImpl(int64_t in_channels, int64_t out_channels, bool use_1x1_conv, int64_t stride) {
  conv1_ = register_module("conv1", Conv2d(Conv2dOptions(in_channels, out_channels, 3).padding(1).stride(stride)));
  bn1_ = register_module("bn1", BatchNorm2d(out_channels));
  conv2_ = register_module("conv2", Conv2d(Conv2dOptions(out_channels, out_channels, 3).padding(1)));
  bn2_ = register_module("bn2", BatchNorm2d(out_channels));
  if (use_1x1_conv)
    conv3_ = register_module("conv3", Conv2d(Conv2dOptions(in_channels, out_channels, 1).stride(stride)));
}

Tensor ResidualImpl::forward(const Tensor& x) {
  Tensor y = relu(bn1_(conv1_(x)));
  y = bn2_(conv2_(y));
  return relu(y + (conv3_ ? conv3_(x) : x));
}

}  // namespace duet::nn
