#include "duet/parallel/distributed.h"

#include <algorithm>

#include "duet/autograd/factory.h"
#include "duet/autograd/grad_mode.h"
#include "duet/core/error.h"
#include "duet/kernels/cuda/runtime.h"
#include "duet/nn/functional.h"
#include "duet/parallel/comm/nccl_communicator.h"
#include "duet/parallel/replica_threads.h"

namespace duet::parallel {
namespace {

// FNV-1a over a tensor's bytes: equal replicas hash equal, and one flipped bit almost surely not.
int64_t hash_of(const Tensor& t) {
  Tensor c = t.detach().to(cpu(0)).contiguous();
  const auto* bytes = static_cast<const unsigned char*>(c.data_ptr());
  uint64_t h = 1469598103934665603ull;
  for (int64_t i = 0; i < c.numel() * static_cast<int64_t>(c.element_size()); ++i) {
    h = (h ^ bytes[i]) * 1099511628211ull;
  }
  return static_cast<int64_t>(h);
}

std::vector<int64_t> parameter_hashes(const nn::Module& model) {
  std::vector<int64_t> hashes;
  for (const Tensor& p : model.parameters()) hashes.push_back(hash_of(p));
  return hashes;
}

// NCCL where every rank has a GPU of its own; the local group (threads and device copies)
// for CPU devices, and for virtual CUDA devices, which NCCL refuses to put on one GPU.
std::vector<std::shared_ptr<Communicator>> make_group(const std::vector<Device>& devices, const DDPOptions& options) {
  const bool gpus = std::all_of(devices.begin(), devices.end(), [](Device d) { return d.is_cuda(); });
  if (gpus && devices.size() > 1 && nccl_is_built() && !cuda::virtual_devices()) {
    return make_nccl_group(devices, {.timeout = options.comm_timeout});
  }
  return make_local_group(devices, {.algorithm = options.algorithm, .timeout = options.comm_timeout});
}

}  // namespace

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<nn::Module> model,
                                                 const OptimizerFactory& make_optimizer, std::vector<Device> devices,
                                                 DDPOptions options)
    : devices_(std::move(devices)), options_(options) {
  DUET_CHECK(model && make_optimizer, "DistributedDataParallel: needs a model and an optimizer factory");
  check_loss_reduction(options_.loss, "DistributedDataParallel");
  DUET_CHECK(!devices_.empty(), "DistributedDataParallel: needs at least one device");
  check_model_on(*model, devices_[0], "DistributedDataParallel");
  std::vector<std::shared_ptr<Communicator>> comms = make_group(devices_, options_);
  layout_ = std::make_shared<const BucketLayout>(
      plan_buckets(model->parameters(), options_.first_bucket_bytes, options_.bucket_bytes));
  for (size_t r = 0; r < devices_.size(); ++r) {
    // The one time parameters travel: every other rank starts from a copy of rank 0's model,
    // which is what DDP's constructor broadcast achieves. From here on only gradients move.
    add_rank(r == 0 ? model : model->clone(devices_[r]), make_optimizer, comms[r]);
  }
}

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<nn::Module> model,
                                                 const OptimizerFactory& make_optimizer,
                                                 std::shared_ptr<Communicator> comm, DDPOptions options)
    : options_(options) {
  DUET_CHECK(model && make_optimizer && comm, "DistributedDataParallel: needs a model, an optimizer factory and a "
             "communicator");
  check_loss_reduction(options_.loss, "DistributedDataParallel");
  devices_ = {comm->device()};
  check_model_on(*model, comm->device(), "DistributedDataParallel");
  // DDP's constructor broadcast: whatever each process initialised, rank 0's values win.
  for (const Tensor& p : model->parameters()) comm->broadcast(p, 0);
  for (const auto& [name, b] : model->named_buffers()) {
    if (b.defined()) comm->broadcast(b, 0);
  }
  layout_ = std::make_shared<const BucketLayout>(
      plan_buckets(model->parameters(), options_.first_bucket_bytes, options_.bucket_bytes));
  add_rank(std::move(model), make_optimizer, std::move(comm));
}

void DistributedDataParallel::add_rank(std::shared_ptr<nn::Module> model, const OptimizerFactory& make_optimizer,
                                       std::shared_ptr<Communicator> comm) {
  Rank rank;
  rank.model = std::move(model);
  rank.optimizer = make_optimizer(rank.model->parameters());
  DUET_CHECK(rank.optimizer, "DistributedDataParallel: the optimizer factory returned null for rank ", comm->rank());
  rank.comm = std::move(comm);
  if (options_.bucketed) rank.reducer = BucketReducer::create(layout_, rank.model->parameters(), rank.comm);
  ranks_.push_back(std::move(rank));
}

DistributedDataParallel::~DistributedDataParallel() = default;

std::string DistributedDataParallel::devices() const {
  if (!is_multi_process()) return device_list(devices_);
  return "[" + std::to_string(world_size()) + " " + ranks_[0].comm->name() + " ranks, " + devices_[0].str() +
         " each]";
}

StepResult DistributedDataParallel::train_step(const data::Batch& batch) {
  const size_t local = ranks_.size();
  phases_ = {};
  rank_phases_.assign(local, {});
  PhaseTimer timer(phases_, 0, devices_);
  // Each local rank's shard. In one process it is split here as scatter would, and timed as
  // the scatter phase; across processes the batch already is this rank's shard.
  std::vector<Tensor> xs, ys;
  int64_t global_count = -1;
  if (is_multi_process()) {
    xs = {batch.x.detach().to(devices_[0])};
    ys = {batch.y.detach().to(devices_[0])};
  } else {
    xs = split_rows(batch.x, devices_);
    ys = split_rows(batch.y, devices_);
    global_count = batch.y.numel();
  }
  timer.lap(Phase::scatter);

  // One thread per local rank. A batch smaller than the world leaves the last ranks without
  // examples; they still take part in every collective, with zero gradients. A rank that
  // throws aborts the group, so the others stop waiting for it.
  std::vector<StepResult> results(local);
  run_on_devices(
      devices_,
      [&](size_t r) { results[r] = r < xs.size() ? run_rank(r, xs[r], ys[r], global_count) : run_rank(r, {}, {}, global_count); },
      [&](size_t r, const std::string& what) { ranks_[r].comm->abort(what); });
  ++steps_;
  for (const PhaseTimes& times : rank_phases_) {
    PhaseTimes ranks_only = times;
    ranks_only[Phase::scatter] = 0;  // the host's, measured above
    phases_.merge_max(ranks_only);
  }
  if (options_.check_every > 0 && steps_ % options_.check_every == 0) check_replicas();
  return global_result(results);
}

// The global mean loss from the per-shard means, weighted by shard size. In one process the
// host adds them up; across processes that takes one more small all-reduce.
StepResult DistributedDataParallel::global_result(const std::vector<StepResult>& results) {
  StepResult out;
  for (const StepResult& r : results) {  // each rank's loss is the mean over its shard
    out.loss += r.loss * static_cast<double>(r.count);
    out.correct += r.correct;
    out.count += r.count;
  }
  if (is_multi_process()) {
    Tensor totals = from_vector<double>({out.loss, static_cast<double>(out.correct), static_cast<double>(out.count)},
                                        {}, {.dtype = DType::f64, .device = devices_[0]});
    ranks_[0].comm->all_reduce(totals);
    std::vector<double> t = totals.to_vector<double>();
    out.loss = t[0];
    out.correct = static_cast<int64_t>(t[1]);
    out.count = static_cast<int64_t>(t[2]);
  }
  if (out.count > 0) out.loss /= static_cast<double>(out.count);
  return out;
}

StepResult DistributedDataParallel::run_rank(size_t r, const Tensor& x, const Tensor& y, int64_t global_count) {
  Rank& rank = ranks_[r];
  PhaseTimer timer(rank_phases_[r], static_cast<int>(r), {rank.comm->device()});
  rank.comm->reset_stats();
  rank.optimizer->zero_grad();

  // Buffers (BatchNorm's running statistics) follow rank 0 before the forward, as DDP's
  // broadcast_buffers does; never between forward and backward, which would change what the
  // backward saved.
  for (const auto& [name, b] : rank.model->named_buffers()) {
    if (b.defined()) rank.comm->broadcast(b, 0);
  }
  const int64_t n_local = x.defined() ? x.size(0) : 0;
  if (global_count < 0) {
    Tensor count = full({1}, static_cast<double>(n_local), {.dtype = DType::f64, .device = rank.comm->device()});
    rank.comm->all_reduce(count);
    global_count = static_cast<int64_t>(count.item<double>());
  }
  timer.lap(Phase::buffer_sync);

  // The gradient weighting. Rank k's loss is the mean over its n_k examples, so its gradient
  // is (1/n_k) sum_k; times n_k/n it becomes (1/n) sum_k, and the SUM over ranks is the
  // gradient of the global mean loss: exact for unequal shards. mean_of_means instead averages
  // the ranks' mean-loss gradients (sum over ranks of (1/N)(1/n_k) sum_k), which equals it
  // only when all shards are equal.
  // A sum loss needs no weighting: the sum over ranks of the shards' sums is the global sum.
  const bool weighted = options_.loss == LossReduction::mean && !options_.mean_of_means && global_count > 0;
  const double scale = weighted ? static_cast<double>(n_local) / static_cast<double>(global_count) : 1.0;
  const ReduceOp op = options_.mean_of_means ? ReduceOp::avg : ReduceOp::sum;
  if (rank.reducer) rank.reducer->prepare(scale, op);

  StepResult result;  // an empty shard's: no examples
  if (n_local > 0) {
    Tensor logits = rank.model->forward(x);
    timer.lap(Phase::forward);
    Tensor loss = nn::functional::cross_entropy(logits, y, options_.loss);
    timer.lap(Phase::loss);
    // The hooks fire inside this call, on this thread, and launch the buckets as they fill.
    loss.backward();
    timer.lap(Phase::backward);
    result = step_result(loss, options_.loss, logits, y);
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

void DistributedDataParallel::check_replicas() {
  // hashes[k]: rank k's, gathered over the group across processes, read directly in one.
  std::vector<std::vector<int64_t>> hashes;
  std::vector<std::string> where;  // how to name rank k
  if (is_multi_process()) {
    std::vector<int64_t> mine = parameter_hashes(*ranks_[0].model);
    Tensor local = from_vector<int64_t>(mine, {}, {.dtype = DType::i64, .device = devices_[0]});
    for (const Tensor& t : ranks_[0].comm->all_gather(local)) hashes.push_back(t.to_vector<int64_t>());
    for (int k = 0; k < world_size(); ++k) where.push_back("rank " + std::to_string(k));
  } else {
    for (size_t k = 0; k < ranks_.size(); ++k) {
      hashes.push_back(parameter_hashes(*ranks_[k].model));
      where.push_back("rank " + std::to_string(k) + " (" + devices_[k].str() + ")");
    }
  }
  nn::NamedTensors names = ranks_[0].model->named_parameters();
  for (size_t k = 1; k < hashes.size(); ++k) {
    for (size_t i = 0; i < names.size(); ++i) {
      DUET_CHECK(hashes[k][i] == hashes[0][i], "DistributedDataParallel: after step ", steps_, ", the replica of ",
                 where[k], " diverged from rank 0's at parameter '", names[i].first, "'");
    }
  }
}

std::vector<size_t> DistributedDataParallel::launch_order(size_t local_rank) const {
  const auto& reducer = ranks_.at(local_rank).reducer;
  return reducer ? reducer->launch_order() : std::vector<size_t>{};
}

std::vector<size_t> DistributedDataParallel::ready_order(size_t local_rank) const {
  const auto& reducer = ranks_.at(local_rank).reducer;
  return reducer ? reducer->ready_order() : std::vector<size_t>{};
}

}  // namespace duet::parallel
