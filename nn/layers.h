// The layers. Each holds its parameters in the Module registry and calls its functional twin
// (nn/functional.h). Options structs stand in for long lists of positional ints:
//   nn::Conv2d(nn::Conv2dOptions(1, 6, 5).padding(2))
#pragma once

#include <initializer_list>
#include <memory>
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
  std::string name() const override;
  const Tensor& weight() const { return parameter(weight_); }
  Tensor bias() const { return has_bias_ ? parameter(bias_) : Tensor(); }

 private:
  int64_t in_, out_;
  bool has_bias_;
  size_t weight_ = 0, bias_ = 0;
};
DUET_MODULE(Linear);

// ---- Conv2d ----
struct Conv2dOptions {
  Conv2dOptions(int64_t in_channels, int64_t out_channels, int64_t kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  Conv2dOptions& stride(int64_t s) { stride_ = s; return *this; }
  Conv2dOptions& padding(int64_t p) { padding_ = p; return *this; }
  Conv2dOptions& bias(bool b) { bias_ = b; return *this; }
  int64_t in_channels_, out_channels_, kernel_size_;
  int64_t stride_ = 1, padding_ = 0;
  bool bias_ = true;
};

class Conv2dImpl final : public Cloneable<Conv2dImpl> {
 public:
  explicit Conv2dImpl(const Conv2dOptions& options);
  Tensor forward(const Tensor& x) override;
  std::string name() const override;
  const Tensor& weight() const { return parameter(weight_); }
  Tensor bias() const { return options_.bias_ ? parameter(bias_) : Tensor(); }
  const Conv2dOptions& options() const { return options_; }

 private:
  Conv2dOptions options_;
  size_t weight_ = 0, bias_ = 0;
};
DUET_MODULE(Conv2d);

// ---- pooling ----
// "MaxPool2d(kernel=2, stride=2, padding=0)".
std::string pool_name(const char* kind, const functional::Pool2dParams& params);

// MaxPool2d and AvgPool2d differ only in the functional op they call.
template <Tensor (*Pool)(const Tensor&, functional::Pool2dParams), const char* Kind>
class Pool2dImpl final : public Cloneable<Pool2dImpl<Pool, Kind>> {
 public:
  explicit Pool2dImpl(int64_t kernel, int64_t stride = 0, int64_t padding = 0) : params_{kernel, stride, padding} {}
  Tensor forward(const Tensor& x) override { return Pool(x, params_); }
  std::string name() const override { return pool_name(Kind, params_); }

 private:
  functional::Pool2dParams params_;
};
inline constexpr char kMaxPool2dName[] = "MaxPool2d";
inline constexpr char kAvgPool2dName[] = "AvgPool2d";
using MaxPool2dImpl = Pool2dImpl<functional::max_pool2d, kMaxPool2dName>;
using AvgPool2dImpl = Pool2dImpl<functional::avg_pool2d, kAvgPool2dName>;
DUET_MODULE(MaxPool2d);
DUET_MODULE(AvgPool2d);

class AdaptiveAvgPool2dImpl final : public Cloneable<AdaptiveAvgPool2dImpl> {
 public:
  explicit AdaptiveAvgPool2dImpl(int64_t output_size) : output_size_(output_size) {}
  Tensor forward(const Tensor& x) override { return functional::adaptive_avg_pool2d(x, output_size_); }
  std::string name() const override;

 private:
  int64_t output_size_;
};
DUET_MODULE(AdaptiveAvgPool2d);

// ---- BatchNorm2d ----
struct BatchNormOptions {
  double momentum = 0.1;
  double eps = 1e-5;
};

class BatchNorm2dImpl final : public Cloneable<BatchNorm2dImpl> {
 public:
  explicit BatchNorm2dImpl(int64_t channels, BatchNormOptions options = {});
  Tensor forward(const Tensor& x) override;
  std::string name() const override;
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
// One class per activation keeps printing and the layer list readable.
#define DUET_ACTIVATION(Name, fn)                                                   \
  class Name##Impl final : public Cloneable<Name##Impl> {                           \
   public:                                                                          \
    Tensor forward(const Tensor& x) override { return fn(x); }                      \
    std::string name() const override { return #Name "()"; }                       \
  };                                                                                \
  DUET_MODULE(Name)
DUET_ACTIVATION(ReLU, ::duet::relu);
DUET_ACTIVATION(Sigmoid, ::duet::sigmoid);
DUET_ACTIVATION(Tanh, ::duet::tanh);
#undef DUET_ACTIVATION

class DropoutImpl final : public Cloneable<DropoutImpl> {
 public:
  explicit DropoutImpl(double p = 0.5);
  Tensor forward(const Tensor& x) override;
  std::string name() const override;

 private:
  double p_;
};
DUET_MODULE(Dropout);

// Flattens dims start_dim..end_dim (by default everything but the batch dim).
class FlattenImpl final : public Cloneable<FlattenImpl> {
 public:
  explicit FlattenImpl(int64_t start_dim = 1, int64_t end_dim = -1) : start_(start_dim), end_(end_dim) {}
  Tensor forward(const Tensor& x) override { return x.flatten(start_, end_); }
  std::string name() const override { return "Flatten()"; }

 private:
  int64_t start_, end_;
};
DUET_MODULE(Flatten);

// ---- containers ----
class SequentialImpl final : public Cloneable<SequentialImpl> {
 public:
  SequentialImpl() = default;
  template <class... Modules>
    requires(sizeof...(Modules) > 0)
  explicit SequentialImpl(Modules&&... modules) {
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
