// The layers. Each holds its parameters in the Module registry and calls its functional twin
// (nn/functional.h). Options structs stand in for long lists of positional ints, with
// libtorch's setters; a window's sizes take one value for both axes or {h, w}:
//   nn::Conv2d(nn::Conv2dOptions(1, 6, 5).padding(2))
//   nn::Conv2d(nn::Conv2dOptions(8, 8, {3, 1}).stride({2, 1}).dilation(2).groups(8))
//   nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2).ceil_mode(true))
#pragma once

#include <initializer_list>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "duet/autograd/ops.h"
#include "duet/nn/functional.h"
#include "duet/nn/module.h"

namespace duet::nn {

// ---- Linear ----
class LinearImpl final : public Cloneable<LinearImpl> {
 public:
  // weight [out, in] and bias [out], both U(-1/sqrt(in), 1/sqrt(in)) as in PyTorch.
  LinearImpl(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Linear"; }
  std::string extra_repr() const override;
  const Tensor& weight() const { return parameter(weight_); }
  Tensor bias() const { return has_bias_ ? parameter(bias_) : Tensor(); }

 private:
  int64_t in_, out_;
  bool has_bias_;
  size_t weight_ = 0, bias_ = 0;
};
DUET_MODULE(Linear);

// ---- Conv2d ----
// PyTorch's Conv2d arguments (functional::Conv2dParams). The weight is
// [out_channels, in_channels / groups, kh, kw]; both channel counts must divide by groups.
struct Conv2dOptions {
  Conv2dOptions(int64_t in_channels, int64_t out_channels, PerAxis kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  Conv2dOptions& kernel_size(PerAxis k) {
    kernel_size_ = k;
    return *this;
  }
  Conv2dOptions& stride(PerAxis s) {
    stride_ = s;
    return *this;
  }
  Conv2dOptions& padding(PerAxis p) {
    padding_ = p;
    return *this;
  }
  Conv2dOptions& dilation(PerAxis d) {
    dilation_ = d;
    return *this;
  }
  Conv2dOptions& groups(int64_t g) {
    groups_ = g;
    return *this;
  }
  Conv2dOptions& bias(bool b) {
    bias_ = b;
    return *this;
  }
  int64_t in_channels_, out_channels_;
  PerAxis kernel_size_;
  PerAxis stride_ = 1, padding_ = 0, dilation_ = 1;
  int64_t groups_ = 1;
  bool bias_ = true;
};

class Conv2dImpl final : public Cloneable<Conv2dImpl> {
 public:
  explicit Conv2dImpl(const Conv2dOptions& options);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Conv2d"; }
  std::string extra_repr() const override;
  const Tensor& weight() const { return parameter(weight_); }
  Tensor bias() const { return options_.bias_ ? parameter(bias_) : Tensor(); }
  const Conv2dOptions& options() const { return options_; }
  functional::Conv2dParams params() const;

 private:
  Conv2dOptions options_;
  size_t weight_ = 0, bias_ = 0;
};
DUET_MODULE(Conv2d);

// ---- pooling ----
// The options of MaxPool2d and AvgPool2d: functional::Pool2dParams behind libtorch's setters.
template <class Options> struct Pool2dOptionsBase {
  Pool2dOptionsBase(PerAxis kernel_size) { params_.kernel = kernel_size; }
  Options& stride(PerAxis s) {
    params_.stride = s;
    return self();
  }
  Options& padding(PerAxis p) {
    params_.padding = p;
    return self();
  }
  Options& ceil_mode(bool c) {
    params_.ceil_mode = c;
    return self();
  }
  functional::Pool2dParams params_;

 protected:
  Options& self() { return static_cast<Options&>(*this); }
};
struct MaxPool2dOptions : Pool2dOptionsBase<MaxPool2dOptions> {
  using Pool2dOptionsBase::Pool2dOptionsBase;
  MaxPool2dOptions& dilation(PerAxis d) {
    params_.dilation = d;
    return *this;
  }
};
struct AvgPool2dOptions : Pool2dOptionsBase<AvgPool2dOptions> {
  using Pool2dOptionsBase::Pool2dOptionsBase;
  AvgPool2dOptions& count_include_pad(bool c) {
    params_.count_include_pad = c;
    return *this;
  }
  AvgPool2dOptions& divisor_override(int64_t d) {
    params_.divisor_override = d;
    return *this;
  }
};

// PyTorch's extra_repr of MaxPool2d ("kernel_size=2, stride=2, padding=0, dilation=1,
// ceil_mode=False") or of AvgPool2d (its first three only, as PyTorch prints it). A size of
// two values prints as (h, w).
std::string pool_extra_repr(bool max, const functional::Pool2dParams& params);

// MaxPool2d and AvgPool2d differ only in the functional op they call and their options.
template <Tensor (*Pool)(const Tensor&, functional::Pool2dParams), const char* Kind, class Options>
class Pool2dImpl final : public Cloneable<Pool2dImpl<Pool, Kind, Options>> {
 public:
  explicit Pool2dImpl(const Options& options) : params_(options.params_) {}
  // MaxPool2d(2), AvgPool2d(3, 2, 1): kernel, stride (0: the kernel's), padding.
  explicit Pool2dImpl(PerAxis kernel, PerAxis stride = 0, PerAxis padding = 0)
      : params_{.kernel = kernel, .stride = stride, .padding = padding} {}
  Tensor forward(const Tensor& x) override { return Pool(x, params_); }
  std::string name() const override { return Kind; }
  std::string extra_repr() const override {
    return pool_extra_repr(std::is_same_v<Options, MaxPool2dOptions>, params_);
  }
  const functional::Pool2dParams& params() const { return params_; }

 private:
  functional::Pool2dParams params_;
};
inline constexpr char kMaxPool2dName[] = "MaxPool2d";
inline constexpr char kAvgPool2dName[] = "AvgPool2d";
using MaxPool2dImpl = Pool2dImpl<functional::max_pool2d, kMaxPool2dName, MaxPool2dOptions>;
using AvgPool2dImpl = Pool2dImpl<functional::avg_pool2d, kAvgPool2dName, AvgPool2dOptions>;
DUET_MODULE(MaxPool2d);
DUET_MODULE(AvgPool2d);

// "output_size=1", "output_size=(2, 3)", as PyTorch's extra_repr.
std::string adaptive_pool_extra_repr(PerAxis output_size);

// AdaptiveAvgPool2d and AdaptiveMaxPool2d: to output_size.h x output_size.w.
template <Tensor (*Pool)(const Tensor&, PerAxis), const char* Kind> class AdaptivePool2dImpl final
    : public Cloneable<AdaptivePool2dImpl<Pool, Kind>> {
 public:
  explicit AdaptivePool2dImpl(PerAxis output_size) : output_size_(output_size) {}
  Tensor forward(const Tensor& x) override { return Pool(x, output_size_); }
  std::string name() const override { return Kind; }
  std::string extra_repr() const override { return adaptive_pool_extra_repr(output_size_); }

 private:
  PerAxis output_size_;
};
inline constexpr char kAdaptiveAvgPool2dName[] = "AdaptiveAvgPool2d";
inline constexpr char kAdaptiveMaxPool2dName[] = "AdaptiveMaxPool2d";
using AdaptiveAvgPool2dImpl = AdaptivePool2dImpl<functional::adaptive_avg_pool2d, kAdaptiveAvgPool2dName>;
using AdaptiveMaxPool2dImpl = AdaptivePool2dImpl<functional::adaptive_max_pool2d, kAdaptiveMaxPool2dName>;
DUET_MODULE(AdaptiveAvgPool2d);
DUET_MODULE(AdaptiveMaxPool2d);

// ---- BatchNorm2d ----
// How the statistics are computed (kernels/batch_norm_math.h, shared by the CPU kernel, duet's
// CUDA kernel and parallel::SyncBatchNorm2d): per channel, every value is taken in double and
// summed in double; mean = sum(x) / count, then var = sum((x - mean)^2) / count (two passes, the
// biased variance normalises, the unbiased one feeds running_var); invstd = 1 / sqrt(var + eps),
// and out = x * scale + shift with scale and shift rounded to the dtype once. The backward sums
// g and g * (x - mean) in double the same way. Against PyTorch 1.13: its CPU kernels also
// accumulate f32 in double with a two-pass variance, so results differ by rounding only; its CUDA
// kernels use Welford's update with f32 accumulators, and cuDNN (duet's default on a GPU, as
// PyTorch's) its own, both within f32 roundings of this. SyncBatchNorm2d runs these same formulas with
// each sum added over the ranks, so with the global batch it matches BatchNorm2d on one device
// up to the order in which the double sums were added.
struct BatchNormOptions {
  // The running statistics' update factor; std::nullopt (PyTorch's momentum=None): the cumulative
  // average, factor 1 / num_batches_tracked. That reads the count from its device, so on a GPU it
  // waits for the device once per training forward, and cannot be recorded in a CUDA graph.
  std::optional<double> momentum = 0.1;
  double eps = 1e-5;

  // Counts one training batch in num_batches_tracked and returns the factor its statistics get:
  // momentum, or 1 / num_batches_tracked for the cumulative average (PyTorch's rule).
  double count_batch(const Tensor& num_batches_tracked) const;
  // "eps=1e-05, momentum=0.1, affine=True, track_running_stats=True" ("momentum=None" for the
  // cumulative average), the tail of PyTorch's extra_repr for the layers that use them.
  std::string str() const;
  // Throws naming `layer` for a momentum outside [0, 1] or an eps <= 0.
  void check(const char* layer) const;
};

class BatchNorm2dImpl final : public Cloneable<BatchNorm2dImpl> {
 public:
  explicit BatchNorm2dImpl(int64_t channels, BatchNormOptions options = {});
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "BatchNorm2d"; }
  std::string extra_repr() const override;
  const Tensor& running_mean() const { return buffer(mean_); }
  const Tensor& running_var() const { return buffer(var_); }
  int64_t channels() const { return channels_; }
  const BatchNormOptions& options() const { return options_; }

 private:
  int64_t channels_;
  BatchNormOptions options_;
  size_t weight_ = 0, bias_ = 0, mean_ = 0, var_ = 0, batches_ = 0;
};
DUET_MODULE(BatchNorm2d);

// ---- activations and shape ----
// One class per activation keeps printing and the layer list readable. `op` is the elementwise
// op, which FusedSequential hands to a fused average pooling after it.
#define DUET_ACTIVATION(Name, fn)                                      \
  class Name##Impl final : public Cloneable<Name##Impl> {              \
   public:                                                             \
    static constexpr kernels::UnaryOp op = kernels::UnaryOp::fn;       \
    Tensor forward(const Tensor& x) override { return ::duet::fn(x); } \
    std::string name() const override { return #Name; }                \
  };                                                                   \
  DUET_MODULE(Name)
DUET_ACTIVATION(ReLU, relu);
DUET_ACTIVATION(Sigmoid, sigmoid);
DUET_ACTIVATION(Tanh, tanh);
#undef DUET_ACTIVATION

class DropoutImpl final : public Cloneable<DropoutImpl> {
 public:
  explicit DropoutImpl(double p = 0.5);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Dropout"; }
  std::string extra_repr() const override;

 private:
  double p_;
};
DUET_MODULE(Dropout);

// Flattens dims start_dim..end_dim (by default everything but the batch dim).
class FlattenImpl final : public Cloneable<FlattenImpl> {
 public:
  explicit FlattenImpl(int64_t start_dim = 1, int64_t end_dim = -1) : start_(start_dim), end_(end_dim) {}
  Tensor forward(const Tensor& x) override { return x.flatten(start_, end_); }
  std::string name() const override { return "Flatten"; }
  std::string extra_repr() const override;

 private:
  int64_t start_, end_;
};
DUET_MODULE(Flatten);

// ---- containers ----
// Runs its modules in order, as torch.nn.Sequential, and nothing else (FusedSequential, in
// fused_sequential.h, runs pooled activation maps through fused ops).
class SequentialImpl final : public Cloneable<SequentialImpl> {
 public:
  SequentialImpl() = default;
  template <class... Modules>
  requires(sizeof...(Modules) > 0) explicit SequentialImpl(Modules&&... modules) {
    (push_back(std::shared_ptr<Module>(std::forward<Modules>(modules))), ...);
  }
  void push_back(std::shared_ptr<Module> module);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Sequential"; }
  size_t size() const { return num_children(); }
  Module& operator[](size_t i) const { return child(i); }
};
DUET_MODULE(Sequential);

// d2l's residual block: conv3x3-BN-ReLU-conv3x3-BN, plus the input (through a strided 1x1 conv
// when the shape changes), then ReLU.
class ResidualImpl final : public Cloneable<ResidualImpl> {
 public:
  ResidualImpl(int64_t in_channels, int64_t out_channels, bool use_1x1_conv = false, int64_t stride = 1);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Residual"; }

 private:
  Child<Conv2d> conv1_, conv2_, conv3_;  // conv3_: the 1x1 shortcut, when the shape changes
  // Any module: parallel::convert_sync_batchnorm swaps these for SyncBatchNorm2d.
  Child<Module> bn1_, bn2_;
};
DUET_MODULE(Residual);

}  // namespace duet::nn
