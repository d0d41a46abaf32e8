// SyncBatchNorm2d: BatchNorm2d that normalises with the statistics of the GLOBAL batch, over
// every replica of a DDP group, as PyTorch's torch.nn.SyncBatchNorm does.
//
// Why: under plain BatchNorm each DDP rank (and each DataParallel replica) normalises with its
// own shard's mean and variance, so data-parallel training of a BatchNorm model is not
// single-device training on the global batch (docs/parallel-strategies.md). SyncBatchNorm makes
// it so:
//   forward   every rank sums x per channel over its shard and counts its values; an all-reduce
//             of [sum, count] gives the global mean; every rank then sums (x - mean)^2, and a
//             second all-reduce gives the global (biased) variance, with which every rank
//             normalises. Running statistics are updated from them as PyTorch does: the mean,
//             and the UNBIASED variance over the global batch.
//   backward  every rank sums dy and dy * (x - mean) per channel; one all-reduce gives the
//             global sums, and dx = w * invstd * (dy - sum_dy / N - (x - mean) * invstd^2 *
//             sum_dy_xmu / N). The weight and bias gradients stay local (sum_dy_xmu * invstd
//             and sum_dy): DDP's gradient all-reduce sums them like any other.
// The arithmetic is BatchNorm2d's, from the same functions (kernels/batch_norm_math.h): terms
// and sums in double, per-channel coefficients in double, the elementwise passes rounded in the
// input's dtype as the kernels round them. On one global batch the two then differ only in the
// order the double sums were added (a rank's shard, then the ranks), which almost never changes
// a rounded f32 result; the second forward all-reduce is the price of the kernels' two-pass
// variance (PyTorch's SyncBatchNorm gathers each rank's mean, invstd and count once instead).
//
// Every rank must run the layer's forward and backward the same number of times (they are
// collectives), so under DDP every rank needs at least one example per step; DDP checks.
// Without a communicator, with a group of one, or in eval mode it is plain BatchNorm2d.
// Its parameters and buffers have BatchNorm2d's names, so state dicts and checkpoints move
// between the two.
#pragma once

#include <memory>

#include "duet/nn/layers.h"
#include "duet/parallel/comm/communicator.h"

namespace duet::parallel {

class SyncBatchNorm2dImpl final : public nn::Cloneable<SyncBatchNorm2dImpl> {
 public:
  explicit SyncBatchNorm2dImpl(int64_t channels, nn::BatchNormOptions options = {});
  // Takes over a BatchNorm2d's tensors (shared, not copied) and options.
  explicit SyncBatchNorm2dImpl(const nn::BatchNorm2dImpl& batch_norm);

  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "SyncBatchNorm2d"; }
  std::string extra_repr() const override;
  // This replica's rank of the group whose batches it normalises together; null: none.
  void set_communicator(std::shared_ptr<Communicator> comm) { comm_ = std::move(comm); }
  const Tensor& running_mean() const { return buffer(mean_); }
  const Tensor& running_var() const { return buffer(var_); }

 private:
  void register_tensors(const Tensor& weight, const Tensor& bias, const Tensor& mean, const Tensor& var,
                        const Tensor& batches);

  int64_t channels_;
  nn::BatchNormOptions options_;
  size_t weight_ = 0, bias_ = 0, mean_ = 0, var_ = 0, batches_ = 0;
  std::shared_ptr<Communicator> comm_;
};
DUET_MODULE(SyncBatchNorm2d);

// The functional form, training mode: x [N, C] or [N, C, H, W] on comm's device, normalised
// with the global batch's statistics; updates the running statistics when given.
Tensor sync_batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                       const Tensor& running_var, double momentum, double eps, std::shared_ptr<Communicator> comm);

// Replaces every BatchNorm2d in the tree under `module` by a SyncBatchNorm2d holding the same
// tensors, and returns the module (a SyncBatchNorm2d itself if `module` was a BatchNorm2d), as
// PyTorch's SyncBatchNorm.convert_sync_batchnorm.
std::shared_ptr<nn::Module> convert_sync_batchnorm(std::shared_ptr<nn::Module> module);

// Gives every SyncBatchNorm2d in the tree this replica's communicator; returns how many it found.
size_t attach_communicator(nn::Module& module, const std::shared_ptr<Communicator>& comm);

}  // namespace duet::parallel
