#include "duet/parallel/distributed.h"

#include <algorithm>
#include <cmath>

#include "duet/autograd/factory.h"
#include "duet/autograd/grad_mode.h"
#include "duet/core/error.h"
#include "duet/nn/functional.h"
#include "duet/parallel/replica_threads.h"

namespace duet::parallel {

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<nn::Module> model,
                                                 const OptimizerFactory& make_optimizer, std::vector<Device> devices,
                                                 DDPOptions options)
    : devices_(std::move(devices)), options_(options) {
  DUET_CHECK(model && make_optimizer, "DistributedDataParallel: needs a model and an optimizer factory");
  DUET_CHECK(!devices_.empty(), "DistributedDataParallel: needs at least one device");
  for (const auto& [name, p] : model->named_parameters()) {
    DUET_CHECK(p.device() == devices_[0], "DistributedDataParallel: the model must live on ", devices_[0].str(),
               " (devices[0]), but parameter '", name, "' is on ", p.device().str());
  }
  std::vector<std::shared_ptr<Communicator>> comms =
      make_local_group(devices_, {.algorithm = options_.algorithm, .timeout = options_.comm_timeout});
  layout_ = std::make_shared<const BucketLayout>(
      plan_buckets(model->parameters(), options_.first_bucket_bytes, options_.bucket_bytes));
  for (size_t r = 0; r < devices_.size(); ++r) {
    Rank rank;
    // The one time parameters travel: every other rank starts from a copy of rank 0's model,
    // which is what DDP's constructor broadcast achieves. From here on only gradients move.
    rank.model = r == 0 ? model : model->clone(devices_[r]);
    rank.optimizer = make_optimizer(rank.model->parameters());
    DUET_CHECK(rank.optimizer, "DistributedDataParallel: the optimizer factory returned null for rank ", r);
    rank.comm = comms[r];
    if (options_.bucketed) rank.reducer = BucketReducer::create(layout_, rank.model->parameters(), rank.comm);
    ranks_.push_back(std::move(rank));
  }
}

DistributedDataParallel::~DistributedDataParallel() = default;

std::string DistributedDataParallel::devices() const { return device_list(devices_); }

StepResult DistributedDataParallel::train_step(const data::Batch& batch) {
  const size_t world = ranks_.size();
  phases_ = {};
  rank_phases_.assign(world, {});
  PhaseTimer timer(phases_);
  // Each rank's shard, split as scatter would. (Real DDP has no scatter: each process loads
  // its own shard through a DistributedSampler. Here that split is timed as the scatter phase.)
  std::vector<Tensor> xs = split_rows(batch.x, devices_);
  std::vector<Tensor> ys = split_rows(batch.y, devices_);
  const int64_t global_count = batch.y.numel();
  timer.lap(Phase::scatter);

  // One thread per rank. A batch smaller than the world leaves the last ranks without
  // examples; they still take part in every collective, with zero gradients.
  std::vector<RankResult> results(world);
  run_on_devices(devices_, [&](size_t r) {
    results[r] = r < xs.size() ? run_rank(r, xs[r], ys[r], global_count) : run_rank(r, Tensor(), Tensor(), global_count);
  });
  ++steps_;
  for (const PhaseTimes& times : rank_phases_) {
    PhaseTimes ranks_only = times;
    ranks_only[Phase::scatter] = 0;  // the host's, measured above
    phases_.merge_max(ranks_only);
  }
  if (options_.check_every > 0 && steps_ % options_.check_every == 0) check_replicas();

  // The global mean loss from the per-shard means, weighted by shard size. (One process: the
  // host adds them up. Across processes this would be one more small all-reduce.)
  StepResult out;
  for (const RankResult& r : results) {
    out.loss += r.loss * static_cast<double>(r.count);
    out.correct += r.correct;
    out.count += r.count;
  }
  if (out.count > 0) out.loss /= static_cast<double>(out.count);
  return out;
}

DistributedDataParallel::RankResult DistributedDataParallel::run_rank(size_t r, const Tensor& x, const Tensor& y,
                                                                      int64_t global_count) {
  Rank& rank = ranks_[r];
  PhaseTimer timer(rank_phases_[r]);
  rank.comm->reset_stats();
  rank.optimizer->zero_grad();

  // Buffers (BatchNorm's running statistics) follow rank 0 before the forward, as DDP's
  // broadcast_buffers does; never between forward and backward, which would change what the
  // backward saved.
  for (const auto& [name, b] : rank.model->named_buffers()) {
    if (b.defined()) rank.comm->broadcast(b, 0);
  }
  timer.lap(Phase::buffer_sync);

  // The gradient weighting. Rank k's loss is the mean over its n_k examples, so its gradient
  // is (1/n_k) sum_k; times n_k/n it becomes (1/n) sum_k, and the SUM over ranks is the
  // gradient of the global mean loss: exact for unequal shards. mean_of_means instead averages
  // the ranks' mean-loss gradients (sum over ranks of (1/N)(1/n_k) sum_k), which equals it
  // only when all shards are equal.
  const int64_t n_local = x.defined() ? x.size(0) : 0;
  const double scale = options_.mean_of_means || global_count == 0
                           ? 1.0
                           : static_cast<double>(n_local) / static_cast<double>(global_count);
  const ReduceOp op = options_.mean_of_means ? ReduceOp::avg : ReduceOp::sum;
  if (rank.reducer) rank.reducer->prepare(scale, op);

  RankResult result;
  result.count = n_local;
  if (n_local > 0) {
    Tensor logits = rank.model->forward(x);
    timer.lap(Phase::forward);
    Tensor loss = nn::functional::cross_entropy(logits, y);
    timer.lap(Phase::loss);
    // The hooks fire inside this call, on this thread, and launch the buckets as they fill.
    loss.backward();
    timer.lap(Phase::backward);
    result.loss = loss.item<double>();
    result.correct = count_correct(logits, y);
  }
  if (rank.reducer) {
    rank.reducer->finish();  // waits for the buckets still in flight, copies them into .grad
  } else {
    all_reduce_unbucketed(rank, scale, op);
  }
  timer.lap(Phase::all_reduce);

  // The same reduced gradients and the same optimizer on every rank: identical updates.
  rank.optimizer->step();
  timer.lap(Phase::step);
  rank_phases_[r].bytes_moved = rank.comm->stats().bytes_sent;
  return result;
}

// The comparison mode: nothing overlaps backward, and every gradient pays a collective's
// latency. Last parameter first, as the buckets go.
void DistributedDataParallel::all_reduce_unbucketed(Rank& rank, double scale, ReduceOp op) {
  NoGradGuard no_grad;
  std::vector<Tensor> params = rank.model->parameters();
  for (size_t i = params.size(); i-- > 0;) {
    if (!params[i].grad().defined()) params[i].set_grad(zeros_like(params[i]));  // unused, or no examples
    Tensor grad = params[i].grad();
    if (scale != 1) grad.mul_(scale);
    rank.comm->all_reduce(grad, op);
  }
}

void DistributedDataParallel::check_replicas() const {
  nn::NamedTensors reference = ranks_[0].model->named_parameters();
  for (size_t r = 1; r < ranks_.size(); ++r) {
    nn::NamedTensors mine = ranks_[r].model->named_parameters();
    for (size_t i = 0; i < reference.size(); ++i) {
      std::vector<double> a = reference[i].second.to_vector<double>();
      std::vector<double> b = mine[i].second.to_vector<double>();
      double worst = 0;
      for (size_t j = 0; j < a.size(); ++j) worst = std::max(worst, std::fabs(a[j] - b[j]));
      DUET_CHECK(a == b, "DistributedDataParallel: after step ", steps_, ", the replica on ", devices_[r].str(),
                 " diverged from rank 0 at parameter '", reference[i].first, "' (max |difference| ", worst, ")");
    }
  }
}

std::vector<size_t> DistributedDataParallel::launch_order(size_t rank) const {
  const auto& reducer = ranks_.at(rank).reducer;
  return reducer ? reducer->launch_order() : std::vector<size_t>{};
}

std::vector<size_t> DistributedDataParallel::ready_order(size_t rank) const {
  const auto& reducer = ranks_.at(rank).reducer;
  return reducer ? reducer->ready_order() : std::vector<size_t>{};
}

}  // namespace duet::parallel
