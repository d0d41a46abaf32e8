#include "duet/parallel/distributed.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

#include "duet/autograd/factory.h"
#include "duet/autograd/grad_mode.h"
#include "duet/core/error.h"
#include "duet/kernels/cuda/runtime.h"
#include "duet/nn/functional.h"
#include "duet/parallel/broadcast_coalesced.h"
#include "duet/parallel/comm/comm_counter.h"
#include "duet/parallel/comm/nccl_communicator.h"
#include "duet/parallel/d2l_all_reduce.h"
#include "duet/parallel/replica_threads.h"
#include "duet/parallel/sharded_optimizer.h"
#include "duet/parallel/sync_batch_norm.h"

namespace duet::parallel {
namespace {

// FNV-1a over a tensor's bytes: equal replicas hash equal, and one flipped bit almost surely not.
int64_t hash_of(const Tensor& t) {
  Tensor c = t.detach().to(cpu(0)).contiguous();
  const auto* bytes = static_cast<const unsigned char*>(c.data_ptr());
  uint64_t h = 1469598103934665603ull;
  for (int64_t i = 0; i < c.nbytes(); ++i) {
    h = (h ^ bytes[i]) * 1099511628211ull;
  }
  return static_cast<int64_t>(h);
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  Tensor x = a.detach().to(cpu(0)).contiguous(), y = b.detach().to(cpu(0)).contiguous();
  const size_t bytes = static_cast<size_t>(x.numel()) * x.element_size();
  return x.sizes() == y.sizes() && x.dtype() == y.dtype() && std::memcmp(x.data_ptr(), y.data_ptr(), bytes) == 0;
}

std::vector<int64_t> parameter_hashes(const nn::Module& model) {
  std::vector<int64_t> hashes;
  for (const Tensor& p : model.parameters()) hashes.push_back(hash_of(p));
  return hashes;
}

void check_sharding(const DDPOptions& options) {
  DUET_CHECK(!options.shard_optimizer || (options.bucketed && !options.reduce_through_first_device),
             "DistributedDataParallel: a sharded optimizer (zero1) reduce-scatters the gradient buckets: it needs "
             "bucketed and no reduce_through_first_device");
  DUET_CHECK(!options.shard_optimizer || options.grad_compression == GradCompression::none,
             "DistributedDataParallel: gradient compression casts an all-reduce's buckets, and a sharded optimizer "
             "(zero1) reduce-scatters them: zero1 takes no grad_compression");
}

int64_t mib_to_bytes(double mb, const char* what) {
  DUET_CHECK(mb > 0, "DistributedDataParallel: ", what, " must be positive, got ", mb);
  return std::max<int64_t>(1, static_cast<int64_t>(mb * 1024 * 1024));
}

BucketLayout plan_for(const nn::Module& model, const DDPOptions& options, const std::vector<size_t>& order = {}) {
  return plan_buckets(model.parameters(), mib_to_bytes(options.first_bucket_mb, "first_bucket_mb"),
                      mib_to_bytes(options.bucket_cap_mb, "bucket_cap_mb"), order);
}

std::vector<Tensor> buffers_of(const nn::Module& model) {
  std::vector<Tensor> buffers;
  for (const auto& [name, b] : model.named_buffers()) buffers.push_back(b);
  return buffers;
}

}  // namespace

// NCCL where every rank has a GPU of its own; the local group (threads and device copies)
// for CPU devices, and for virtual CUDA devices, which NCCL refuses to put on one GPU.
std::vector<std::shared_ptr<Communicator>> make_ddp_group(const std::vector<Device>& devices,
                                                          const DDPOptions& options) {
  const bool gpus = std::all_of(devices.begin(), devices.end(), [](Device d) { return d.is_cuda(); });
  if (gpus && devices.size() > 1 && nccl_is_built() && !cuda::virtual_devices()) {
    DUET_CHECK(!options.link.emulated(), "DistributedDataParallel: link ", options.link.name,
               " is emulated between logical devices only; NCCL's GPUs use their real links");
    return make_nccl_group(devices, {.timeout = options.comm_timeout});
  }
  return make_local_group(devices,
                          {.algorithm = options.algorithm, .timeout = options.comm_timeout, .link = options.link});
}

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<nn::Module> model,
                                                 const OptimizerFactory& make_optimizer, std::vector<Device> devices,
                                                 DDPOptions options)
    : devices_(std::move(devices)), options_(options) {
  DUET_CHECK(model && make_optimizer, "DistributedDataParallel: needs a model and an optimizer factory");
  check_loss_reduction(options_.loss, "DistributedDataParallel");
  DUET_CHECK(!devices_.empty(), "DistributedDataParallel: needs at least one device");
  check_model_on(*model, devices_[0], "DistributedDataParallel");
  if (options_.reduce_through_first_device) {
    DUET_CHECK(!options_.bucketed && !options_.mean_of_means,
               "DistributedDataParallel: the all-reduce through the first device is unbucketed, and sums");
    DUET_CHECK(options_.grad_compression == GradCompression::none,
               "DistributedDataParallel: the all-reduce through the first device has no gradient compression");
  }
  check_sharding(options_);
  if (options_.sync_batchnorm) model = convert_sync_batchnorm(std::move(model));
  std::vector<std::shared_ptr<Communicator>> comms = make_ddp_group(devices_, options_);
  layout_ = std::make_shared<const BucketLayout>(plan_for(*model, options_));
  for (size_t r = 0; r < devices_.size(); ++r) {
    // The one time parameters travel: every other rank starts from a copy of rank 0's model,
    // which is what DDP's constructor broadcast achieves. From here on only gradients move
    // (and, under zero1, the updated shards).
    add_rank(r == 0 ? model : model->clone(devices_[r]), make_optimizer, comms[r]);
  }
  if (options_.shard_optimizer) {
    // Every rank's shard is in this process: rank 0's state() reads them all directly.
    std::vector<ShardedOptimizer*> sharded;
    for (const Rank& rank : ranks_) sharded.push_back(static_cast<ShardedOptimizer*>(rank.optimizer.get()));
    const std::vector<const ShardedOptimizer*> group(sharded.begin(), sharded.end());
    for (ShardedOptimizer* optimizer : sharded) optimizer->set_local_group(group);
  }
}

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<nn::Module> model,
                                                 const OptimizerFactory& make_optimizer,
                                                 std::shared_ptr<Communicator> comm, DDPOptions options)
    : options_(options) {
  DUET_CHECK(model && make_optimizer && comm,
             "DistributedDataParallel: needs a model, an optimizer factory and a "
             "communicator");
  check_loss_reduction(options_.loss, "DistributedDataParallel");
  DUET_CHECK(!options_.reduce_through_first_device,
             "DistributedDataParallel: the all-reduce through the first device copies every replica's gradients "
             "within one process, not across processes");
  check_sharding(options_);
  devices_ = {comm->device()};
  check_model_on(*model, comm->device(), "DistributedDataParallel");
  if (options_.sync_batchnorm) model = convert_sync_batchnorm(std::move(model));
  // DDP's constructor broadcast: whatever each process initialised, rank 0's values win.
  std::vector<Tensor> state = model->parameters();
  for (const Tensor& b : buffers_of(*model)) state.push_back(b);
  broadcast_coalesced(*comm, state, 0);
  layout_ = std::make_shared<const BucketLayout>(plan_for(*model, options_));
  add_rank(std::move(model), make_optimizer, std::move(comm));
}

void DistributedDataParallel::add_rank(std::shared_ptr<nn::Module> model, const OptimizerFactory& make_optimizer,
                                       std::shared_ptr<Communicator> comm) {
  Rank rank;
  rank.model = std::move(model);
  rank.comm = std::move(comm);
  DUET_CHECK(options_.grad_compression == GradCompression::none || rank.comm->compresses(),
             "DistributedDataParallel: ", name(options_.grad_compression), " gradient compression needs a local group ",
             "(ring or naive); the ", rank.comm->name(), " communicator has none");
  // Converted here or built with them by the caller: each replica's layers talk to its rank.
  sync_batchnorm_ = attach_communicator(*rank.model, rank.comm) > 0;
  if (options_.shard_optimizer) {
    rank.reducer =
        BucketReducer::create(layout_, rank.model->parameters(), rank.comm, BucketCollective::reduce_scatter);
    rank.optimizer =
        std::make_unique<ShardedOptimizer>(rank.model->parameters(), rank.reducer, rank.comm, make_optimizer);
  } else {
    rank.optimizer = make_optimizer(rank.model->parameters());
    if (options_.bucketed)
      rank.reducer = BucketReducer::create(layout_, rank.model->parameters(), rank.comm, BucketCollective::all_reduce,
                                           options_.grad_compression);
  }
  DUET_CHECK(rank.optimizer, "DistributedDataParallel: the optimizer factory returned null for rank ",
             rank.comm->rank());
  ranks_.push_back(std::move(rank));
}

DistributedDataParallel::~DistributedDataParallel() = default;

std::string DistributedDataParallel::devices() const {
  if (!is_multi_process()) return device_list(devices_);
  return "[" + std::to_string(world_size()) + " " + ranks_[0].comm->name() + " ranks, " + devices_[0].str() + " each]";
}

std::vector<std::vector<DistributedDataParallel::Shard>> DistributedDataParallel::shard(
    const std::vector<data::Batch>& micro_batches) const {
  std::vector<std::vector<Shard>> shards(ranks_.size(), std::vector<Shard>(micro_batches.size()));
  for (size_t m = 0; m < micro_batches.size(); ++m) {
    const data::Batch& batch = micro_batches[m];
    if (is_multi_process()) {
      // The batch already is this rank's shard.
      if (batch.y.size(0) > 0) shards[0][m] = {batch.x.detach().to(devices_[0]), batch.y.detach().to(devices_[0])};
      continue;
    }
    // Split as scatter would. A batch smaller than the world leaves the last ranks without
    // examples; they still take part in every collective, with zero gradients.
    std::vector<Tensor> xs = split_rows(batch.x, devices_), ys = split_rows(batch.y, devices_);
    for (size_t r = 0; r < xs.size(); ++r) shards[r][m] = {xs[r], ys[r]};
    for (size_t r = xs.size(); r < ranks_.size(); ++r) {
      // SyncBatchNorm's statistics are collectives in forward and backward: every rank must run both.
      DUET_CHECK(!sync_batchnorm_,
                 "DistributedDataParallel: SyncBatchNorm needs an example on every rank, but a "
                 "batch of ",
                 batch.y.size(0), " rows over ", ranks_.size(), " ranks leaves ", devices_[r], " without any");
    }
  }
  return shards;
}

StepResult DistributedDataParallel::train_accumulated(const std::vector<data::Batch>& micro_batches) {
  DUET_CHECK(!micro_batches.empty(), "DistributedDataParallel: train_accumulated needs at least one micro-batch");
  const size_t local = ranks_.size();
  phases_ = {};
  rank_phases_.assign(local, {});
  backward_ends_.assign(local, {});
  PhaseTimer timer(phases_, 0, devices_);
  // Each local rank's shard of each micro-batch. In one process it is split here, and timed as
  // the scatter phase; across processes the batches already are this rank's shards.
  std::vector<std::vector<Shard>> shards = shard(micro_batches);
  int64_t global_count = -1;
  if (!is_multi_process()) {
    global_count = 0;
    for (const data::Batch& b : micro_batches) global_count += b.y.size(0);
  }
  timer.lap(Phase::scatter);

  // One thread per local rank. A rank that throws aborts the group, so the others stop
  // waiting for it.
  std::vector<StepResult> results(local);
  run_on_devices(
      devices_, [&](size_t r) { results[r] = run_rank(r, shards[r], global_count); },
      [&](size_t r, const std::string& what) { ranks_[r].comm->abort(what); });
  if (options_.reduce_through_first_device) reduce_through_first_device_and_step();
  ++steps_;
  overlap_of_ranks();
  for (const PhaseTimes& times : rank_phases_) {
    PhaseTimes ranks_only = times;
    ranks_only[Phase::scatter] = 0;  // the host's, measured above
    phases_.merge_max(ranks_only);
  }
  if (!rebuilt_) rebuild_buckets();
  if (options_.check_every > 0 && steps_ % options_.check_every == 0) check_replicas();
  return global_result(results);
}

// What backward hid of each rank's collectives. In one process every rank's launch times are
// here, so the waits for the last rank to launch each collective come out of the figure (across
// processes they are not known, and stay in).
void DistributedDataParallel::overlap_of_ranks() {
  if (world_size() < 2) return;  // nothing was all-reduced
  if (!is_multi_process()) {
    std::vector<std::vector<CommEvent>*> per_rank;
    for (PhaseTimes& times : rank_phases_) per_rank.push_back(&times.comm_events);
    set_launch_waits(per_rank);
  }
  for (size_t r = 0; r < rank_phases_.size(); ++r) {
    rank_phases_[r].overlap =
        overlap_of(rank_phases_[r].comm_events, backward_ends_[r].first, backward_ends_[r].second);
  }
}

void DistributedDataParallel::set_lr(double lr) {
  for (Rank& rank : ranks_) rank.optimizer->set_lr(lr);
}

// The global mean loss from the per-shard means, weighted by shard size. In one process the
// host adds them up; across processes that takes one more small all-reduce. A correct count
// exists where any rank with examples counted one (the targets are class labels).
StepResult DistributedDataParallel::global_result(const std::vector<StepResult>& results) {
  StepResult out;
  double counted = 0;                    // ranks whose targets are class labels
  for (const StepResult& r : results) {  // each rank's loss is the mean over its shard
    out.loss += r.loss * static_cast<double>(r.count);
    if (r.correct) {
      out.correct = out.correct.value_or(0) + *r.correct;
      ++counted;
    }
    out.count += r.count;
  }
  if (is_multi_process()) {
    Tensor totals = from_vector<double>(
        {out.loss, static_cast<double>(out.correct.value_or(0)), static_cast<double>(out.count), counted}, {},
        {.dtype = DType::f64, .device = devices_[0]});
    ranks_[0].comm->all_reduce(totals);
    std::vector<double> t = totals.to_vector<double>();
    out.loss = t[0];
    out.correct = t[3] > 0 ? std::optional<int64_t>(static_cast<int64_t>(t[1])) : std::nullopt;
    out.count = static_cast<int64_t>(t[2]);
  }
  if (out.count > 0) out.loss /= static_cast<double>(out.count);
  return out;
}

StepResult DistributedDataParallel::run_rank(size_t r, const std::vector<Shard>& shards, int64_t global_count) {
  Rank& rank = ranks_[r];
  PhaseTimer timer(rank_phases_[r], static_cast<int>(r), {rank.comm->device()});
  rank.comm->reset_stats();
  rank.optimizer->zero_grad();
  int64_t local_count = 0;
  for (const Shard& s : shards) local_count += s.rows();
  if (global_count < 0) {
    Tensor count = full({1}, static_cast<double>(local_count), {.dtype = DType::f64, .device = rank.comm->device()});
    rank.comm->all_reduce(count);
    global_count = static_cast<int64_t>(count.item<double>());
  }
  timer.lap(Phase::buffer_sync);

  // The gradient weighting, applied to the loss before backward, so that everything backward
  // computes (SyncBatchNorm's all-reduced sums included) is already the global loss's. Rank
  // k's loss is the mean over its n_k examples, so its gradient is (1/n_k) sum_k; times
  // n_k/n it becomes (1/n) sum_k, and the SUM over ranks (and micro-batches) is the gradient of
  // the global mean loss: exact for unequal shards. mean_of_means instead averages the ranks'
  // mean-loss gradients, which equals it only when all shards are equal (and divides by the
  // number of micro-batches, as a PyTorch user's loss / K). A sum loss needs no weighting: the
  // sums over ranks and micro-batches are the global sum.
  const bool weighted = options_.loss == LossReduction::mean && !options_.mean_of_means && global_count > 0;
  const bool per_micro_batch = options_.loss == LossReduction::mean && options_.mean_of_means;
  const ReduceOp op = options_.mean_of_means ? ReduceOp::avg : ReduceOp::sum;

  StepResult result;
  double loss_sum = 0;
  for (size_t m = 0; m < shards.size(); ++m) {
    // Buffers (BatchNorm's running statistics) follow rank 0 before every forward, as DDP's
    // broadcast_buffers does; never between forward and backward, which would change what the
    // backward saved.
    if (options_.broadcast_buffers) broadcast_coalesced(*rank.comm, buffers_of(*rank.model), 0);
    timer.lap(Phase::buffer_sync);
    // no_sync for all but the last micro-batch: the hooks stay unarmed and the gradients add up
    // in .grad; the last backward's hooks reduce the sum.
    if (m + 1 == shards.size() && rank.reducer) rank.reducer->prepare(op);
    const Shard& s = shards[m];
    const int64_t n = s.rows();
    if (n == 0) {
      DUET_CHECK(!sync_batchnorm_, "SyncBatchNorm needs an example on every rank, and rank ", rank.comm->rank(),
                 " has none in micro-batch ", m);
      continue;
    }
    Tensor output = rank.model->forward(s.x);
    timer.lap(Phase::forward);
    Tensor loss = training_loss(options_.loss_fn, options_.loss, output, s.y);
    timer.lap(Phase::loss);
    const double scale = weighted          ? static_cast<double>(n) / static_cast<double>(global_count)
                         : per_micro_batch ? 1.0 / static_cast<double>(shards.size())
                                           : 1.0;
    // The hooks fire inside this call, on this thread, and launch the buckets as they fill.
    (scale == 1 ? loss : loss * scale).backward();
    timer.lap(Phase::backward);
    const StepResult step = step_result(loss, options_.loss, output, s.y);
    loss_sum += step.loss * static_cast<double>(n);
    if (step.correct) result.correct = result.correct.value_or(0) + *step.correct;
    result.count += n;
  }
  if (result.count > 0) result.loss = loss_sum / static_cast<double>(result.count);
  if (options_.reduce_through_first_device) {  // the caller reduces and steps once every rank is here
    rank_phases_[r].bytes_moved = rank.comm->stats().bytes_sent;
    return result;
  }

  const double backward_end = trace_now_us();
  std::vector<CommEvent> events;
  if (rank.reducer) {
    rank.reducer->finish();  // waits for the buckets still in flight, copies them into .grad
    events = rank.reducer->comm_events();
  } else {
    all_reduce_unbucketed(rank, op, events);
  }
  timer.lap(Phase::all_reduce);
  for (CommEvent& e : events) e.track = static_cast<int>(r);
  const double last_gradient = rank.reducer ? rank.reducer->last_gradient_us() : 0;
  backward_ends_[r] = {last_gradient > 0 ? last_gradient : backward_end, backward_end};
  rank_phases_[r].comm_events = std::move(events);

  // The same reduced gradients and the same optimizer on every rank: identical updates. Under
  // zero1 each rank steps its shard and all-gathers the others' (sharded_optimizer.h).
  rank.optimizer->step();
  timer.lap(Phase::step);
  if (options_.shard_optimizer) {
    for (CommEvent e : static_cast<const ShardedOptimizer&>(*rank.optimizer).gather_events()) {
      e.track = static_cast<int>(r);
      rank_phases_[r].comm_events.push_back(std::move(e));
    }
  }
  rank_phases_[r].bytes_moved = rank.comm->stats().bytes_sent;
  return result;
}

// The comparison mode: nothing overlaps backward, and every gradient pays a collective's
// latency. First the map of used parameters, then last parameter first, as the buckets go; a
// parameter no rank used keeps an undefined .grad.
void DistributedDataParallel::all_reduce_unbucketed(Rank& rank, ReduceOp op, std::vector<CommEvent>& events) {
  NoGradGuard no_grad;
  std::vector<Tensor> params = rank.model->parameters();
  auto timed = [&](const std::string& name, const Tensor& t, GradCompression compression) {
    const double launch = trace_now_us();
    rank.comm->all_reduce_compressed(t, compression, op);
    events.push_back({.name = name,
                      .ready_us = launch,
                      .launch_us = launch,
                      .finish_us = trace_now_us(),
                      .bytes = wire_bytes(t.numel(), t.dtype(), compression)});
  };
  Tensor usage = local_usage(params, rank.comm->device());
  timed("unused-parameter map", usage, GradCompression::none);  // counts, never compressed
  const std::vector<float> used = usage.to_vector<float>();
  for (size_t i = params.size(); i-- > 0;) {
    if (used[i] == 0) continue;
    if (!params[i].grad().defined()) params[i].set_grad(zeros_like(params[i]));  // used by another rank
    timed("parameter " + std::to_string(i), params[i].grad(), options_.grad_compression);
  }
}

// d2l's train_batch after its backward: the host, working for device 0, all-reduces every
// gradient through it, one parameter at a time; then every replica steps on its own device.
void DistributedDataParallel::reduce_through_first_device_and_step() {
  PhaseTimes& first = rank_phases_[0];
  const double backward_end = trace_now_us();
  backward_ends_[0] = {backward_end, backward_end};  // nothing overlaps backward
  const int64_t bytes_before = comm_counter().bytes_moved();
  {
    DeviceThreadScope on_first(devices_[0]);
    PhaseTimer timer(first, 0, {devices_[0]});
    std::vector<std::vector<Tensor>> replicas;
    for (const Rank& rank : ranks_) replicas.push_back(rank.model->parameters());
    first.comm_events = d2l_all_reduce(replicas, options_.link);
    timer.lap(Phase::all_reduce);
  }
  first.bytes_moved += comm_counter().bytes_moved() - bytes_before;
  run_on_devices(devices_, [&](size_t r) {
    PhaseTimer timer(rank_phases_[r], static_cast<int>(r), {devices_[r]});
    ranks_[r].optimizer->step();
    timer.lap(Phase::step);
  });
}

// After the first step, as PyTorch's rebuild_buckets: the buckets are planned again in the order
// in which rank 0's gradients arrived (every rank takes rank 0's, so the layouts agree), the
// parameters whose gradients never came last, from last to first.
void DistributedDataParallel::rebuild_buckets() {
  rebuilt_ = true;
  if (!options_.bucketed || options_.shard_optimizer) return;  // zero1's shards, and their state, follow the layout
  const size_t n = layout_->slot.size();
  std::vector<size_t> order = ranks_[0].reducer->grad_ready_order();
  std::vector<bool> listed(n, false);
  for (size_t i : order) listed[i] = true;
  for (size_t i = n; i-- > 0;) {
    if (!listed[i]) order.push_back(i);
  }
  if (is_multi_process()) {
    Tensor shared =
        from_vector(std::vector<int64_t>(order.begin(), order.end()), {static_cast<int64_t>(n)}).to(devices_[0]);
    ranks_[0].comm->broadcast(shared, 0);
    std::vector<int64_t> rank0 = shared.to_vector<int64_t>();
    order.assign(rank0.begin(), rank0.end());
  }
  layout_ = std::make_shared<const BucketLayout>(plan_for(*ranks_[0].model, options_, order));
  for (Rank& rank : ranks_) rank.reducer->set_layout(layout_);
}

std::string DistributedDataParallel::replica_divergence() {
  nn::NamedTensors names = ranks_[0].model->named_parameters();
  auto diverged = [&](const std::string& rank, size_t param) {
    return detail::concat("after step ", steps_, ", the replica of ", rank, " diverged from rank 0's at parameter '",
                          names[param].first, "'");
  };
  if (is_multi_process()) {
    // A checksum per parameter and rank, gathered on every rank.
    std::vector<int64_t> mine = parameter_hashes(*ranks_[0].model);
    Tensor local = from_vector<int64_t>(mine, {}, {.dtype = DType::i64, .device = devices_[0]});
    std::vector<std::vector<int64_t>> hashes;
    for (const Tensor& t : ranks_[0].comm->all_gather(local)) hashes.push_back(t.to_vector<int64_t>());
    for (size_t k = 1; k < hashes.size(); ++k) {
      for (size_t i = 0; i < names.size(); ++i) {
        if (hashes[k][i] != hashes[0][i]) return diverged("rank " + std::to_string(k), i);
      }
    }
    return "";
  }
  // In one process: bit for bit.
  const std::vector<Tensor> reference = ranks_[0].model->parameters();
  for (size_t k = 1; k < ranks_.size(); ++k) {
    const std::vector<Tensor> params = ranks_[k].model->parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      if (!same_bytes(params[i], reference[i]))
        return diverged("rank " + std::to_string(k) + " (" + devices_[k].str() + ")", i);
    }
  }
  return "";
}

void DistributedDataParallel::check_replicas() {
  const std::string divergence = replica_divergence();
  DUET_CHECK(divergence.empty(), "DistributedDataParallel: ", divergence);
}

std::vector<size_t> DistributedDataParallel::launch_order(size_t local_rank) const {
  const auto& reducer = ranks_.at(local_rank).reducer;
  return reducer ? reducer->launch_order() : std::vector<size_t>{};
}

std::vector<size_t> DistributedDataParallel::ready_order(size_t local_rank) const {
  const auto& reducer = ranks_.at(local_rank).reducer;
  return reducer ? reducer->ready_order() : std::vector<size_t>{};
}

std::vector<size_t> DistributedDataParallel::grad_ready_order(size_t local_rank) const {
  const auto& reducer = ranks_.at(local_rank).reducer;
  return reducer ? reducer->grad_ready_order() : std::vector<size_t>{};
}

}  // namespace duet::parallel
