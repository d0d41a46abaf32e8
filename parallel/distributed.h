// Strategy B, DistributedDataParallel: PyTorch's DDP, here in ONE process over N logical
// devices, one thread per device, each rank with its own Communicator (DESIGN.md section 6).
//   - At construction the replicas are made identical: rank 0 holds the given model and every
//     other rank a clone of it (the broadcast from rank 0). Parameters are never sent again.
//   - Each step, every rank (on its own thread) syncs its buffers from rank 0, runs forward,
//     its LOCAL loss and backward on its own shard of the batch. Gradients are all-reduced in
//     flat buckets (grad_buckets.h) launched from post-accumulate-grad hooks while backward
//     still runs, and all finished before step().
//   - Every rank then applies the same optimizer step to its own replica, so the replicas stay
//     identical without being broadcast (an optional check verifies it).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "duet/parallel/grad_buckets.h"
#include "duet/parallel/local_communicator.h"
#include "duet/parallel/phase_times.h"
#include "duet/parallel/strategy.h"

namespace duet::parallel {

using OptimizerFactory = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor> params)>;

struct DDPOptions {
  // Bucketed all-reduce from backward hooks; false: one all-reduce per gradient after backward
  // (for comparison: no overlap, more latency).
  bool bucketed = true;
  int64_t first_bucket_bytes = int64_t{1} << 20;  // PyTorch's bucket_cap_mb for bucket 0: 1 MiB
  int64_t bucket_bytes = int64_t{25} << 20;       // and 25 MiB after it
  // false (exact): rank k weights its mean-loss gradient by n_k / n and the ranks SUM, so B
  // equals A equals single-device training on the same global batch, even for unequal shards.
  // true: PyTorch DDP's behaviour, the AVERAGE over ranks of per-rank mean-loss gradients,
  // which over-weights the examples of a smaller shard.
  bool mean_of_means = false;
  // Every this many steps, check that all replicas hold bit-identical parameters (0: never).
  int64_t check_every = 0;
  LocalAlgorithm algorithm = LocalAlgorithm::ring;
  std::chrono::milliseconds comm_timeout = kDefaultCommTimeout;
};

class DistributedDataParallel final : public Strategy {
 public:
  // `model` lives on devices[0] and becomes rank 0's replica; make_optimizer is called once
  // per rank with that rank's parameters.
  DistributedDataParallel(std::shared_ptr<nn::Module> model, const OptimizerFactory& make_optimizer,
                          std::vector<Device> devices, DDPOptions options = {});
  ~DistributedDataParallel() override;

  StepResult train_step(const data::Batch& batch) override;
  nn::Module& model() override { return *ranks_[0].model; }  // rank 0's replica
  optim::Optimizer& optimizer() override { return *ranks_[0].optimizer; }
  Device device() const override { return devices_[0]; }
  std::string devices() const override;

  size_t world_size() const { return ranks_.size(); }
  nn::Module& replica(size_t rank) { return *ranks_.at(rank).model; }
  // Throws naming the first replica and parameter that differ from rank 0's (bit-exact).
  void check_replicas() const;

  // Per phase, the slowest rank's time (the ranks run concurrently); bytes sent by all ranks.
  const PhaseTimes& last_phases() const { return phases_; }
  const std::vector<PhaseTimes>& last_phases_per_rank() const { return rank_phases_; }
  // Bucketed mode: the layout, and the order in which a rank launched its buckets last step.
  const BucketLayout& buckets() const { return *layout_; }
  std::vector<size_t> launch_order(size_t rank) const;
  std::vector<size_t> ready_order(size_t rank) const;

 private:
  struct Rank {
    std::shared_ptr<nn::Module> model;
    std::unique_ptr<optim::Optimizer> optimizer;
    std::shared_ptr<Communicator> comm;
    std::shared_ptr<BucketReducer> reducer;  // bucketed mode only
  };
  struct RankResult {
    double loss = 0;  // mean over the rank's shard
    int64_t correct = 0;
    int64_t count = 0;
  };
  RankResult run_rank(size_t r, const Tensor& x, const Tensor& y, int64_t global_count);
  void all_reduce_unbucketed(Rank& rank, double scale, ReduceOp op);

  std::vector<Device> devices_;
  DDPOptions options_;
  std::shared_ptr<const BucketLayout> layout_;
  std::vector<Rank> ranks_;
  int64_t steps_ = 0;
  PhaseTimes phases_;
  std::vector<PhaseTimes> rank_phases_;
};

}  // namespace duet::parallel
