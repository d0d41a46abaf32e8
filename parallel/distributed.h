// Strategy B, DistributedDataParallel: PyTorch's DDP (docs/parallel-strategies.md). It runs either
//   - in ONE process over N devices, one thread and one local Communicator per rank, or
//   - as one rank of a multi-process group (mpirun, one process per rank), given that rank's
//     Communicator; each process then loads its own shard through a DistributedSampler.
// Either way:
//   - At construction the replicas are made identical: in one process, every other rank gets a
//     clone of rank 0's model; across processes, rank 0 broadcasts its parameters and buffers.
//     Parameters are never sent again.
//   - Each step, every rank syncs its buffers from rank 0 (broadcast_buffers), runs forward,
//     its LOCAL loss, scaled by its share of the global batch, and backward on its own shard.
//     Gradients are all-reduced in flat buckets (grad_buckets.h) launched from
//     post-accumulate-grad hooks while backward still runs, and all finished before step().
//     Parameters that no rank used keep an undefined .grad. After the first step the buckets
//     are planned again, once, in the order the gradients arrived.
//   - Gradient accumulation (train_accumulated, PyTorch's no_sync): forward and backward on K
//     micro-batches, the gradients adding up locally, and one all-reduce, on the last one only.
//   - sync_batchnorm converts the BatchNorm2d layers to SyncBatchNorm2d (sync_batch_norm.h).
// Where it differs from PyTorch's DDP: unused parameters are always looked for (PyTorch's
// find_unused_parameters=True; its default, False, fails on them), at the price of one small
// all-reduce per step after the buckets; gradient accumulation is one call over the micro-batches
// rather than a no_sync() context; the exact n_k / n weighting is the default (mean_of_means is
// PyTorch's).
//   - Every rank then applies the same optimizer step to its own replica, so the replicas stay
//     identical without being broadcast (an optional check verifies it).
//   - shard_optimizer (zero1, ZeRO stage 1): the buckets are reduce-scattered instead, each rank
//     steps only its chunk of every bucket with a ShardedOptimizer (sharded_optimizer.h), whose
//     state covers that chunk alone, and the updated chunks are all-gathered into every replica.
//     optimizer() and replica_optimizer() are then ShardedOptimizers, whose state() is the whole
//     state.
//   - reduce_through_first_device (ddp-d2l, one process): no buckets and no communicator for
//     the gradients; once every rank's backward is done, the calling thread all-reduces them
//     through device 0, one parameter at a time (d2l_all_reduce.h), then every rank steps.
//   - A rank that fails aborts its group, so the others fail at once instead of waiting out
//     the communication timeout. The DDP object is unusable after a failed step.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "duet/parallel/comm/local_communicator.h"
#include "duet/parallel/ddp_options.h"
#include "duet/parallel/grad_buckets.h"
#include "duet/parallel/phase_times.h"
#include "duet/parallel/strategy.h"

namespace duet::parallel {

// The communicators DDP uses for ranks in this process, rank i on devices[i]: NCCL where every
// rank has a GPU of its own, the local group (options.algorithm) otherwise. Link calibration
// measures the same group.
std::vector<std::shared_ptr<Communicator>> make_ddp_group(const std::vector<Device>& devices,
                                                          const DDPOptions& options);

class DistributedDataParallel final : public Strategy {
 public:
  // One process, N devices: `model` lives on devices[0] and becomes rank 0's replica;
  // make_optimizer is called once per rank with that rank's parameters. train_step takes the
  // global batch and gives rank k the k-th chunk (scatter's rule).
  DistributedDataParallel(std::shared_ptr<nn::Module> model, const OptimizerFactory& make_optimizer,
                          std::vector<Device> devices, DDPOptions options = {});
  // One rank of a multi-process group: `model` lives on comm->device(), and every rank must
  // construct its DDP (a collective). train_step takes THIS rank's shard, of any size, and
  // returns the global batch's loss and counts on every rank. options.algorithm is the
  // communicator's business and is ignored here.
  DistributedDataParallel(std::shared_ptr<nn::Module> model, const OptimizerFactory& make_optimizer,
                          std::shared_ptr<Communicator> comm, DDPOptions options = {});
  ~DistributedDataParallel() override;

  StepResult train_step(const data::Batch& batch) override { return train_accumulated({batch}); }
  // In one process each micro-batch is a global one, split over the ranks; across processes,
  // this rank's shard of each. The gradients of all but the last micro-batch accumulate
  // locally without communication (PyTorch's no_sync); the last one's backward all-reduces the
  // sum. Each rank's micro-batch loss is weighted by its share of all the micro-batches'
  // examples, so the step equals one on their concatenation.
  StepResult train_accumulated(const std::vector<data::Batch>& micro_batches) override;
  nn::Module& model() override { return *ranks_[0].model; }                // this process's first replica
  optim::Optimizer& optimizer() override { return *ranks_[0].optimizer; }  // rank 0's
  // Every local rank's optimizer: each replica steps with its own, and they must agree.
  void set_lr(double lr) override;
  Device device() const override { return devices_[0]; }
  // Local rank `local_rank`'s optimizer (rank 0's is optimizer()).
  optim::Optimizer& replica_optimizer(size_t local_rank) { return *ranks_.at(local_rank).optimizer; }
  std::string devices() const override;

  int world_size() const { return ranks_[0].comm->world_size(); }
  int rank() const { return ranks_[0].comm->rank(); }  // this process's first rank
  bool is_multi_process() const { return ranks_.size() < static_cast<size_t>(world_size()); }
  // The replicas this process holds: every rank's in one process, its own across processes.
  size_t local_ranks() const { return ranks_.size(); }
  nn::Module& replica(size_t local_rank) { return *ranks_.at(local_rank).model; }
  // Whether every replica's parameters equal rank 0's after the last step: "" when they do, else
  // which rank and parameter first differ, after which step. In one process the bytes are
  // compared; across processes a checksum per rank is gathered and compared with rank 0's (a
  // collective: every rank must call it).
  std::string replica_divergence();
  // Throws replica_divergence()'s message unless it is empty.
  void check_replicas();

  // Per phase, the slowest local rank's time (the ranks run concurrently); bytes sent by all
  // local ranks.
  const PhaseTimes& last_phases() const override { return phases_; }
  const std::vector<PhaseTimes>& last_phases_per_rank() const { return rank_phases_; }
  // Bucketed mode: the layout (rebuilt after the first step), and the order in which a rank
  // found its buckets ready and launched them last step.
  const BucketLayout& buckets() const { return *layout_; }
  std::vector<size_t> launch_order(size_t local_rank) const;
  std::vector<size_t> ready_order(size_t local_rank) const;
  // The parameter indices in the order their gradients arrived last step.
  std::vector<size_t> grad_ready_order(size_t local_rank) const;

 private:
  struct Rank {
    std::shared_ptr<nn::Module> model;
    std::unique_ptr<optim::Optimizer> optimizer;
    std::shared_ptr<Communicator> comm;
    std::shared_ptr<BucketReducer> reducer;  // bucketed mode only
  };
  struct Shard {
    Tensor x, y;  // undefined: no examples
    int64_t rows() const { return x.defined() ? x.size(0) : 0; }
  };
  void add_rank(std::shared_ptr<nn::Module> model, const OptimizerFactory& make_optimizer,
                std::shared_ptr<Communicator> comm);
  // The local ranks' shards of each micro-batch: shards[r][m].
  std::vector<std::vector<Shard>> shard(const std::vector<data::Batch>& micro_batches) const;
  // global_count < 0: unknown here (multi-process), all-reduced from the ranks' shard sizes.
  // The rank's loss (the mean over its shards) and counts.
  StepResult run_rank(size_t r, const std::vector<Shard>& shards, int64_t global_count);
  void all_reduce_unbucketed(Rank& rank, ReduceOp op, std::vector<CommEvent>& events);
  void reduce_through_first_device_and_step();
  void rebuild_buckets();
  void overlap_of_ranks();  // after the ranks' step: each rank's CommOverlap
  StepResult global_result(const std::vector<StepResult>& results);

  std::vector<Device> devices_;  // of the local ranks
  DDPOptions options_;
  std::shared_ptr<const BucketLayout> layout_;
  std::vector<Rank> ranks_;      // the local ranks
  bool sync_batchnorm_ = false;  // the model has SyncBatchNorm2d layers
  bool rebuilt_ = false;         // the buckets were planned again after the first step
  int64_t steps_ = 0;
  PhaseTimes phases_;
  std::vector<PhaseTimes> rank_phases_;
  // Per local rank, last step: when its backward computed its last gradient, and when it returned.
  std::vector<std::pair<double, double>> backward_ends_;
};

}  // namespace duet::parallel
