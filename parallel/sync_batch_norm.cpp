#include "duet/parallel/sync_batch_norm.h"

#include "duet/autograd/checks.h"
#include "duet/autograd/function.h"
#include "duet/autograd/grad_mode.h"
#include "duet/autograd/op_helpers.h"
#include "duet/autograd/ops.h"
#include "duet/core/error.h"
#include "duet/kernels/batch_norm_math.h"

namespace duet::parallel {
namespace {

using autograd::SavedTensor;
using autograd::TensorList;
namespace bn = kernels::batch_norm_math;

// The dims a per-channel statistic sums over, and the shape that broadcasts it against x.
std::vector<int64_t> reduce_dims(const Tensor& x) {
  return x.dim() == 4 ? std::vector<int64_t>{0, 2, 3} : std::vector<int64_t>{0};
}
Shape channel_shape(const Tensor& x) { return x.dim() == 4 ? Shape{1, x.size(1), 1, 1} : Shape{1, x.size(1)}; }

using Values = std::vector<double>;

// A per-channel tensor's values, on the host, in double.
Values host(const Tensor& t) { return t.to(cpu()).to(DType::f64).to_vector<double>(); }
// Per-channel values as a tensor shaped to broadcast against x, of `dtype` on x's device.
Tensor per_channel(const Values& values, DType dtype, const Tensor& x) {
  return from_vector<double>(values, {static_cast<int64_t>(values.size())})
      .to(dtype)
      .to(x.device())
      .view(channel_shape(x));
}
// v rounded to dtype (f32 or f64) and back, as a kernel's static_cast<T> rounds it.
double rounded(double v, DType dtype) { return dtype == DType::f32 ? static_cast<double>(static_cast<float>(v)) : v; }
// Each channel's value, or `missing` when the tensor is undefined (no weight: 1, no bias: 0).
Values host_or(const Tensor& t, int64_t channels, double missing) {
  return t.defined() ? host(t) : Values(static_cast<size_t>(channels), missing);
}

class SyncBatchNormBackward final : public autograd::Node {
 public:
  // mean and invstd: the forward's, rounded to x's dtype as BatchNorm2d saves them.
  SyncBatchNormBackward(const Tensor& x, const Tensor& weight, Values mean, Values invstd, double global_count,
                        std::shared_ptr<Communicator> comm)
      : x_(x), mean_(std::move(mean)), invstd_(std::move(invstd)), global_count_(global_count), comm_(std::move(comm)) {
    if (weight.defined()) weight_ = SavedTensor(weight);
  }

  // BatchNorm2d's backward (kernels/batch_norm_math.h) with sum(dy) and sum(dy * (x - mean)) added
  // over the ranks for grad_x. The weight and bias gradients stay local, like every parameter's
  // gradient: DDP's all-reduce adds the ranks' up.
  TensorList apply(TensorList&& grads) override {
    const Tensor x = x_.unpack(*this);
    const int64_t channels = x.size(1);
    const DType dtype = x.dtype();
    // No gradient flowed in: zeros, because the all-reduce below must still run on every rank.
    const Tensor dy = grads.at(0).defined() ? grads[0] : zeros_like(x);
    const Tensor dy64 = dy.to(DType::f64);
    const std::vector<int64_t> dims = reduce_dims(x);
    const Tensor local =
        cat({sum(dy64, dims), sum(dy64 * (x.to(DType::f64) - per_channel(mean_, DType::f64, x)), dims)}, 0);
    const Values sums = host(local);  // sum(dy), then sum(dy * (x - mean))
    const auto sum_g = [&](const Values& v, int64_t c) { return v[static_cast<size_t>(c)]; };
    const auto sum_g_centered = [&](const Values& v, int64_t c) { return v[static_cast<size_t>(channels + c)]; };
    Tensor grad_weight, grad_bias, grad_x;
    if (autograd::input_needs_grad(*this, 1)) {
      Values gw(static_cast<size_t>(channels));
      for (int64_t c = 0; c < channels; ++c) {
        gw[static_cast<size_t>(c)] = sum_g_centered(sums, c) * invstd_[static_cast<size_t>(c)];
      }
      grad_weight = per_channel(gw, dtype, x).reshape({channels});
    }
    if (autograd::input_needs_grad(*this, 2)) {
      grad_bias = per_channel(Values(sums.begin(), sums.begin() + channels), dtype, x).reshape({channels});
    }
    if (autograd::input_needs_grad(*this, 0)) {
      comm_->all_reduce(local);
      const Values global = host(local);
      const Values weight = host_or(weight_.defined() ? weight_.unpack(*this) : Tensor(), channels, 1.0);
      Values a(static_cast<size_t>(channels)), b(a), k(a);
      for (int64_t c = 0; c < channels; ++c) {
        const auto i = static_cast<size_t>(c);
        const bn::InputGradient g = bn::input_gradient(sum_g(global, c), sum_g_centered(global, c), global_count_,
                                                       mean_[i], invstd_[i], weight[i], /*training=*/true);
        a[i] = g.a;
        b[i] = g.b;
        k[i] = g.k;
      }
      // The kernel's a * g + b * x + k, rounded in x's dtype step by step as it does.
      grad_x = (per_channel(a, dtype, x) * dy + per_channel(b, dtype, x) * x) + per_channel(k, dtype, x);
    }
    return {grad_x, grad_weight, grad_bias};
  }
  std::string name() const override { return "SyncBatchNormBackward"; }
  void release_saved() override {
    for (SavedTensor* saved : {&x_, &weight_}) saved->reset();
  }

 private:
  SavedTensor x_, weight_;
  Values mean_, invstd_;
  double global_count_;
  std::shared_ptr<Communicator> comm_;
};

void check_inputs(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                  const Tensor& running_var, double momentum, double eps, const Communicator& comm) {
  const char* op = "sync_batch_norm";
  autograd::check_floating(op, x);
  DUET_CHECK(x.dim() == 2 || x.dim() == 4, op, ": expected input of shape [N, C] or [N, C, H, W], got ", x.describe());
  DUET_CHECK(x.device() == comm.device(), op, ": input ", x.describe(), " is not on the rank's device ", comm.device());
  for (const Tensor& t : {weight, bias, running_mean, running_var}) {
    if (!t.defined()) continue;
    autograd::check_compatible(op, x, t);
    DUET_CHECK(t.dim() == 1 && t.size(0) == x.size(1), op, ": per-channel tensor ", t.describe(),
               " does not match the ", x.size(1), " channels of input ", x.describe());
  }
  DUET_CHECK(running_mean.defined() == running_var.defined(), op, ": give both running statistics, or neither");
  DUET_CHECK(eps > 0 && momentum >= 0 && momentum <= 1, op, ": expected eps > 0 and momentum in [0, 1], got eps ", eps,
             " and momentum ", momentum);
}

}  // namespace

Tensor sync_batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                       const Tensor& running_var, double momentum, double eps, std::shared_ptr<Communicator> comm) {
  DUET_CHECK(comm, "sync_batch_norm: needs a communicator");
  check_inputs(x, weight, bias, running_mean, running_var, momentum, eps, *comm);
  const int64_t channels = x.size(1);
  const DType dtype = x.dtype();
  Tensor out;
  Values saved_mean(static_cast<size_t>(channels)), saved_invstd(saved_mean);
  double count = 0;
  {
    NoGradGuard no_grad;
    // BatchNorm2d's two passes (kernels/batch_norm_math.h), each sum added over the ranks: first
    // [sum(x), count], then sum((x - mean)^2) around the global mean.
    const Tensor x64 = x.to(DType::f64);
    const std::vector<int64_t> dims = reduce_dims(x);
    const double local_count = static_cast<double>(channels > 0 ? x.numel() / channels : 0);
    Tensor sums = cat({sum(x64, dims), full({1}, local_count, autograd::options_of(x64))}, 0);
    comm->all_reduce(sums);
    const Values totals = host(sums);
    count = totals[static_cast<size_t>(channels)];
    DUET_CHECK(count > 1, "sync_batch_norm: expected more than 1 value per channel over the global batch, got ", count,
               " (input ", x.describe(), " on rank ", comm->rank(), ")");
    Values mean(static_cast<size_t>(channels));
    for (size_t c = 0; c < mean.size(); ++c) mean[c] = totals[c] / count;
    const Tensor deviation = x64 - per_channel(mean, DType::f64, x);
    Tensor squares = sum(deviation * deviation, dims);
    comm->all_reduce(squares);
    const Values square_sums = host(squares);
    const Values w = host_or(weight, channels, 1.0), b = host_or(bias, channels, 0.0);
    Values scale(static_cast<size_t>(channels)), shift(scale), var(scale);
    for (size_t c = 0; c < mean.size(); ++c) {
      var[c] = square_sums[c] / count;
      const double invstd = bn::invstd(var[c], eps);
      saved_mean[c] = rounded(mean[c], dtype);
      saved_invstd[c] = rounded(invstd, dtype);
      const bn::Affine affine = bn::affine(mean[c], invstd, w[c], b[c]);
      scale[c] = affine.scale;
      shift[c] = affine.shift;
    }
    out = x * per_channel(scale, dtype, x) + per_channel(shift, dtype, x);
    if (running_mean.defined()) {
      Values rm = host(running_mean), rv = host(running_var);
      for (size_t c = 0; c < rm.size(); ++c) {
        rm[c] = bn::running(rm[c], mean[c], momentum);
        rv[c] = bn::running(rv[c], bn::unbiased(var[c], count), momentum);
      }
      running_mean.copy_(per_channel(rm, running_mean.dtype(), x).reshape({channels}));
      running_var.copy_(per_channel(rv, running_var.dtype(), x).reshape({channels}));
    }
  }
  if (autograd::needs_grad({x, weight, bias})) {
    auto node =
        std::make_shared<SyncBatchNormBackward>(x, weight, std::move(saved_mean), std::move(saved_invstd), count, comm);
    autograd::record(node, {x, weight, bias}, {out});
  }
  return out;
}

SyncBatchNorm2dImpl::SyncBatchNorm2dImpl(int64_t channels, nn::BatchNormOptions options)
    : channels_(channels), options_(options) {
  DUET_CHECK(channels > 0, "SyncBatchNorm2d: channels must be positive, got ", channels);
  options.check("SyncBatchNorm2d");
  register_tensors(ones({channels}), zeros({channels}), zeros({channels}), ones({channels}),
                   zeros({1}, {.dtype = DType::i64}));
}

SyncBatchNorm2dImpl::SyncBatchNorm2dImpl(const nn::BatchNorm2dImpl& batch_norm)
    : channels_(batch_norm.channels()), options_(batch_norm.options()) {
  nn::NamedTensors params = batch_norm.named_parameters(), buffers = batch_norm.named_buffers();
  register_tensors(params.at(0).second, params.at(1).second, buffers.at(0).second, buffers.at(1).second,
                   buffers.at(2).second);
  train(batch_norm.is_training());
}

void SyncBatchNorm2dImpl::register_tensors(const Tensor& weight, const Tensor& bias, const Tensor& mean,
                                           const Tensor& var, const Tensor& batches) {
  weight_ = register_parameter("weight", weight);
  bias_ = register_parameter("bias", bias);
  mean_ = register_buffer("running_mean", mean);
  var_ = register_buffer("running_var", var);
  batches_ = register_buffer("num_batches_tracked", batches);
}

Tensor SyncBatchNorm2dImpl::forward(const Tensor& x) {
  // BatchNorm2d's count and factor (momentum, or the cumulative average's 1 / batches).
  const double momentum = is_training() ? options_.count_batch(buffer(batches_)) : 0;  // unread when not training
  if (is_training() && comm_ && comm_->world_size() > 1) {
    return sync_batch_norm(x, parameter(weight_), parameter(bias_), buffer(mean_), buffer(var_), momentum, options_.eps,
                           comm_);
  }
  // What BatchNorm2d does: eval mode, or nothing to synchronise with.
  return nn::functional::batch_norm(x, parameter(weight_), parameter(bias_), buffer(mean_), buffer(var_), is_training(),
                                    momentum, options_.eps);
}

std::string SyncBatchNorm2dImpl::extra_repr() const { return duet::detail::concat(channels_, ", ", options_.str()); }

std::shared_ptr<nn::Module> convert_sync_batchnorm(std::shared_ptr<nn::Module> module) {
  DUET_CHECK(module, "convert_sync_batchnorm: null module");
  if (auto* bn = dynamic_cast<nn::BatchNorm2dImpl*>(module.get())) return std::make_shared<SyncBatchNorm2dImpl>(*bn);
  for (const auto& [name, child] : std::vector(module->named_children())) {
    std::shared_ptr<nn::Module> converted = convert_sync_batchnorm(child);
    if (converted != child) module->replace_child(name, converted);
  }
  return module;
}

size_t attach_communicator(nn::Module& module, const std::shared_ptr<Communicator>& comm) {
  size_t found = 0;
  if (auto* sync = dynamic_cast<SyncBatchNorm2dImpl*>(&module)) {
    sync->set_communicator(comm);
    ++found;
  }
  for (const auto& [name, child] : module.named_children()) found += attach_communicator(*child, comm);
  return found;
}

}  // namespace duet::parallel
