#include "duet/nn/layers.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

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

// Python's spellings, as PyTorch's extra_repr writes them.
const char* python_bool(bool value) { return value ? "True" : "False"; }

// repr(float): the shortest digits that read back, positional for exponents in [-4, 16)
// ("0.1", "1.0", "0.001"), else scientific with at least two exponent digits ("1e-05").
std::string python_float(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char text[32];
  const auto result = std::to_chars(text, text + sizeof text, value, std::chars_format::scientific);
  const std::string scientific(text, result.ptr);  // "-1.25e-05"
  const size_t e = scientific.find('e');
  const bool negative = scientific[0] == '-';
  std::string digits;
  for (char c : scientific.substr(negative, e - negative))
    if (c != '.') digits += c;
  const int exponent = std::stoi(scientific.substr(e + 1));
  std::string out;
  if (exponent < -4 || exponent >= 16) {
    out = digits.substr(0, 1) + (digits.size() > 1 ? "." + digits.substr(1) : "") + (exponent < 0 ? "e-" : "e+") +
          (std::abs(exponent) < 10 ? "0" : "") + std::to_string(std::abs(exponent));
  } else if (exponent < 0) {
    out = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
  } else {
    const size_t whole = static_cast<size_t>(exponent) + 1;
    if (digits.size() <= whole) out = digits + std::string(whole - digits.size(), '0') + ".0";
    else out = digits.substr(0, whole) + "." + digits.substr(whole);
  }
  return negative ? "-" + out : out;
}

// "(5, 5)": PyTorch stores Conv2d's sizes as tuples and prints them so.
std::string tuple(PerAxis v) { return detail::concat("(", v.h, ", ", v.w, ")"); }

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

std::string LinearImpl::extra_repr() const {
  return detail::concat("in_features=", in_, ", out_features=", out_, ", bias=", python_bool(has_bias_));
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

// PyTorch's Conv2d.extra_repr: the sizes always as tuples, the defaults left out.
std::string Conv2dImpl::extra_repr() const {
  const auto& o = options_;
  return detail::concat(o.in_channels_, ", ", o.out_channels_, ", kernel_size=", tuple(o.kernel_size_),
                        ", stride=", tuple(o.stride_),
                        o.padding_ == PerAxis(0) ? "" : detail::concat(", padding=", tuple(o.padding_)),
                        o.dilation_ == PerAxis(1) ? "" : detail::concat(", dilation=", tuple(o.dilation_)),
                        o.groups_ == 1 ? "" : detail::concat(", groups=", o.groups_), o.bias_ ? "" : ", bias=False");
}

// ---- pooling ----
std::string pool_extra_repr(bool max, const functional::Pool2dParams& p) {
  const PerAxis stride{p.stride.h ? p.stride.h : p.kernel.h, p.stride.w ? p.stride.w : p.kernel.w};
  const std::string common = detail::concat("kernel_size=", p.kernel, ", stride=", stride, ", padding=", p.padding);
  if (!max) return common;
  return detail::concat(common, ", dilation=", p.dilation, ", ceil_mode=", python_bool(p.ceil_mode));
}

std::string adaptive_pool_extra_repr(PerAxis size) { return detail::concat("output_size=", size); }

// ---- BatchNorm2d ----
double BatchNormOptions::count_batch(const Tensor& num_batches_tracked) const {
  NoGradGuard no_grad;
  num_batches_tracked.add_(ones_like(num_batches_tracked));
  if (momentum) return *momentum;
  // The cumulative moving average: the n-th batch's statistics weigh 1 / n.
  return 1.0 / static_cast<double>(num_batches_tracked.item<int64_t>());
}

std::string BatchNormOptions::str() const {
  return detail::concat("eps=", python_float(eps), ", momentum=", momentum ? python_float(*momentum) : "None",
                        ", affine=True, track_running_stats=True");
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

std::string BatchNorm2dImpl::extra_repr() const { return detail::concat(channels_, ", ", options_.str()); }

// ---- Dropout ----
DropoutImpl::DropoutImpl(double p) : p_(p) { DUET_CHECK(p >= 0 && p < 1, "Dropout: p must be in [0, 1), got ", p); }

Tensor DropoutImpl::forward(const Tensor& x) { return functional::dropout(x, p_, is_training()); }

std::string DropoutImpl::extra_repr() const { return detail::concat("p=", python_float(p_), ", inplace=False"); }

// ---- Flatten ----
std::string FlattenImpl::extra_repr() const { return detail::concat("start_dim=", start_, ", end_dim=", end_); }

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
