#include "duet/parallel/lab/compressed_gradients.h"

#include <optional>
#include <vector>

#include "duet/autograd/cpu_device_binding.h"
#include "duet/autograd/factory.h"
#include "duet/autograd/grad_mode.h"
#include "duet/autograd/ops.h"
#include "duet/core/error.h"
#include "duet/core/placement.h"
#include "duet/kernels/kernels.h"

namespace duet::parallel {
namespace {

// Gives the kernel loops of a CPU model that owns no cores (the check's device; its forward here
// and its backward on the engine's worker both use the shared pool) as many threads as a rank's
// device had, for one shard at a time; the shared pool's size comes back at the end. The ranks
// are idle meanwhile: the check runs between their steps.
class RankThreads {
 public:
  explicit RankThreads(Device model_device)
      : active_(model_device.is_cpu() && cpu_device_cores(model_device.index).empty()) {
    if (!active_) return;
    binding_.emplace(model_device.index);
    shared_ = kernels::num_threads();
  }
  ~RankThreads() {
    if (active_) kernels::set_num_threads(shared_);
  }
  RankThreads(const RankThreads&) = delete;
  RankThreads& operator=(const RankThreads&) = delete;

  void become(Device rank_device) const {
    if (!active_ || !rank_device.is_cpu()) return;
    const size_t cores = cpu_device_cores(rank_device.index).size();
    kernels::set_num_threads(cores > 0 ? static_cast<int>(cores) : shared_);
  }

 private:
  bool active_;
  std::optional<autograd::CpuDeviceScope> binding_;  // this thread on the shared pool, like the model's device
  int shared_ = 0;
};

}  // namespace

void compressed_ddp_gradients(nn::Module& model, const LossFn& loss_fn, const data::Batch& batch,
                              const CompressedRanks& ranks) {
  DUET_CHECK(ranks.format != GradCompression::none && ranks.ranks >= 1,
             "compressed_ddp_gradients: needs fp16 or bf16 and at least one rank");
  const std::vector<Tensor> params = model.parameters();
  if (params.empty()) return;
  const Device device = params[0].device();
  const int64_t rows = batch.y.size(0);
  const std::vector<int64_t> shard_rows = chunk_sizes(rows, ranks.ranks);
  std::vector<std::vector<float>> sums(params.size());  // in rank order, f32, of the rounded gradients
  std::vector<bool> reached(params.size(), false);
  int64_t start = 0;
  const RankThreads threads(device);
  for (int r = 0; r < ranks.ranks; ++r) {
    threads.become({ranks.first_device.type, ranks.first_device.index + r});
    // A rank beyond the shards (a batch smaller than the world) contributes zeros, as in ddp.
    const int64_t n = static_cast<size_t>(r) < shard_rows.size() ? shard_rows[static_cast<size_t>(r)] : 0;
    for (const Tensor& p : params) p.set_grad(Tensor());
    if (n > 0) {
      const Tensor x = batch.x.narrow(0, start, n).contiguous().to(device);
      const Tensor y = batch.y.narrow(0, start, n).contiguous().to(device);
      start += n;
      Tensor loss = training_loss(loss_fn, nn::functional::Reduction::mean, model.forward(x), y);
      // ddp's weighting (distributed.cpp), the same double and the same multiplication.
      const double scale = ranks.mean_of_means ? 1.0 : static_cast<double>(n) / static_cast<double>(rows);
      (scale == 1 ? loss : loss * scale).backward();
    }
    for (size_t i = 0; i < params.size(); ++i) {
      const Tensor grad = params[i].grad();
      reached[i] = reached[i] || grad.defined();
      std::vector<float> values =
          grad.defined() ? grad.to_vector<float>() : std::vector<float>(static_cast<size_t>(params[i].numel()), 0.0f);
      for (float& v : values) v = round_to_wire(v, ranks.format);
      if (r == 0) {
        sums[i] = std::move(values);
        continue;
      }
      for (size_t j = 0; j < values.size(); ++j) sums[i][j] += values[j];
    }
  }
  NoGradGuard no_grad;
  for (size_t i = 0; i < params.size(); ++i) {
    params[i].set_grad(Tensor());
    if (!reached[i]) continue;
    for (float& v : sums[i]) {
      if (ranks.mean_of_means) v /= static_cast<float>(ranks.ranks);
      v = round_to_wire(v, ranks.format);
    }
    params[i].set_grad(from_vector(sums[i], params[i].sizes()).to(device));
  }
}

}  // namespace duet::parallel
