#include "duet/parallel/sync_batch_norm.h"

#include "duet/autograd/checks.h"
#include "duet/autograd/function.h"
#include "duet/autograd/grad_mode.h"
#include "duet/autograd/op_helpers.h"
#include "duet/autograd/ops.h"
#include "duet/core/error.h"

namespace duet::parallel {
namespace {

using autograd::SavedTensor;
using autograd::TensorList;

// The dims a per-channel statistic sums over, and the shape that broadcasts it against x.
std::vector<int64_t> reduce_dims(const Tensor& x) {
  return x.dim() == 4 ? std::vector<int64_t>{0, 2, 3} : std::vector<int64_t>{0};
}
Shape channel_shape(const Tensor& x) { return x.dim() == 4 ? Shape{1, x.size(1), 1, 1} : Shape{1, x.size(1)}; }

class SyncBatchNormBackward final : public autograd::Node {
 public:
  // mean and invstd in f64.
  SyncBatchNormBackward(const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& invstd,
                        double global_count, std::shared_ptr<Communicator> comm)
      : x_(x), mean_(mean), invstd_(invstd), global_count_(global_count), comm_(std::move(comm)) {
    if (weight.defined()) weight_ = SavedTensor(weight);
  }

  TensorList apply(TensorList&& grads) override {
    const Tensor x = x_.unpack(*this), mean = mean_.unpack(*this), invstd = invstd_.unpack(*this);
    // In f64, like the statistics: sum(dy) and sum(dy * (x - mean)) are small differences of
    // large terms, and f32 sums over a large batch's H * W lose most of their digits (enough to
    // move resnet18's gradients by 1e-3 relative after one step).
    const Tensor x64 = x.to(DType::f64);
    // No gradient flowed in: zeros, because the all-reduce below must still run on every rank.
    const Tensor dy = grads.at(0).defined() ? grads[0].to(DType::f64) : zeros_like(x64);
    const Shape shape = channel_shape(x);
    const std::vector<int64_t> dims = reduce_dims(x);
    const Tensor xmu = x64 - mean.view(shape);
    const Tensor sum_dy = sum(dy, dims), sum_dy_xmu = sum(dy * xmu, dims);
    // Local, like every parameter's gradient: DDP's all-reduce adds the ranks' up.
    Tensor grad_weight = autograd::input_needs_grad(*this, 1) ? (sum_dy_xmu * invstd).to(x.dtype()) : Tensor();
    Tensor grad_bias = autograd::input_needs_grad(*this, 2) ? sum_dy.to(x.dtype()) : Tensor();
    Tensor grad_x;
    if (autograd::input_needs_grad(*this, 0)) {
      const int64_t c = x.size(1);
      Tensor global = cat({sum_dy, sum_dy_xmu}, 0);
      comm_->all_reduce(global);
      const Tensor mean_dy = global.narrow(0, 0, c) / global_count_;
      const Tensor mean_dy_xmu = global.narrow(0, c, c) / global_count_;
      Tensor scale = weight_.defined() ? invstd * weight_.unpack(*this).to(DType::f64) : invstd;
      grad_x = ((dy - mean_dy.view(shape) - xmu * (invstd * invstd * mean_dy_xmu).view(shape)) * scale.view(shape))
                   .to(x.dtype());
    }
    return {grad_x, grad_weight, grad_bias};
  }
  std::string name() const override { return "SyncBatchNormBackward"; }
  void release_saved() override {
    for (SavedTensor* saved : {&x_, &weight_, &mean_, &invstd_}) saved->reset();
  }

 private:
  SavedTensor x_, weight_, mean_, invstd_;
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
  const int64_t c = x.size(1);
  const Shape shape = channel_shape(x);
  Tensor out, mean64, invstd64;  // the statistics, kept in f64 for backward
  double count = 0;
  {
    NoGradGuard no_grad;
    // [sum, sum of squares, count] of this shard, in f64, summed over the ranks at once.
    const Tensor x64 = x.to(DType::f64);
    const std::vector<int64_t> dims = reduce_dims(x);
    const double local_count = static_cast<double>(c > 0 ? x.numel() / c : 0);
    Tensor stats = cat({sum(x64, dims), sum(x64 * x64, dims), full({1}, local_count, autograd::options_of(x64))}, 0);
    comm->all_reduce(stats);
    count = stats.narrow(0, 2 * c, 1).item<double>();
    DUET_CHECK(count > 1, "sync_batch_norm: expected more than 1 value per channel over the global batch, got ", count,
               " (input ", x.describe(), " on rank ", comm->rank(), ")");
    mean64 = stats.narrow(0, 0, c) / count;
    const Tensor var64 = maximum(stats.narrow(0, c, c) / count - mean64 * mean64, zeros_like(mean64));
    invstd64 = 1.0 / sqrt(var64 + eps);
    const Tensor mean = mean64.to(x.dtype()), invstd = invstd64.to(x.dtype());
    Tensor scale = weight.defined() ? invstd * weight : invstd;
    out = (x - mean.view(shape)) * scale.view(shape);
    if (bias.defined()) out = out + bias.view(shape);
    if (running_mean.defined()) {
      // PyTorch's update: the batch mean, and the unbiased variance of the global batch.
      running_mean.copy_(running_mean * (1 - momentum) + mean64.to(running_mean.dtype()) * momentum);
      running_var.copy_(running_var * (1 - momentum) +
                        (var64 * (count / (count - 1))).to(running_var.dtype()) * momentum);
    }
  }
  if (autograd::needs_grad({x, weight, bias})) {
    auto node = std::make_shared<SyncBatchNormBackward>(x, weight, mean64, invstd64, count, comm);
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

std::string SyncBatchNorm2dImpl::name() const {
  return duet::detail::concat("SyncBatchNorm2d(", channels_, ", ", options_.str(), ")");
}

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
