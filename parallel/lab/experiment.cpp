#include "duet/parallel/lab/experiment.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "duet/autograd/grad_mode.h"
#include "duet/autograd/ops.h"
#include "duet/core/allocator.h"
#include "duet/core/error.h"
#include "duet/core/generator.h"
#include "duet/nn/models/models.h"
#include "duet/parallel/lab/step_check.h"
#include "duet/parallel/transfers.h"

namespace duet::parallel {
namespace {

int64_t bytes_of(const std::vector<Tensor>& tensors) {
  int64_t bytes = 0;
  for (const Tensor& t : tensors) {
    if (t.defined()) bytes += t.nbytes();
  }
  return bytes;
}

double max_abs_diff(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = 0; j < a[i].size(); ++j) worst = std::max(worst, std::fabs(a[i][j] - b[i][j]));
  }
  return worst;
}

double ms_between(std::chrono::steady_clock::time_point from, std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

int64_t mib(double mb) { return static_cast<int64_t>(mb * (1 << 20)); }

// When each parameter's gradient is ready, stamped by a post-accumulate hook; the cost model
// simulates DDP's buckets from these times (step_prediction.h). A clock read per parameter.
class GradReadyClock {
 public:
  explicit GradReadyClock(const std::vector<Tensor>& params)
      : hooks_(std::make_shared<Hooks>()), sums_(params.size(), 0.0) {
    hooks_->stamps.assign(params.size(), 0.0);
    for (size_t i = 0; i < params.size(); ++i) {
      params[i].register_post_accumulate_grad_hook([hooks = hooks_, i](const Tensor&) {
        hooks->stamps[i] = trace_now_us();
        hooks->order.push_back(i);
      });
    }
  }
  // Before a step's backward: its order starts afresh.
  void start_step() { hooks_->order.clear(); }
  // After a step whose backward began at backward_start_us (its phase event's start).
  void add_step(double backward_start_us) {
    for (size_t i = 0; i < sums_.size(); ++i) sums_[i] += std::max(0.0, hooks_->stamps[i] - backward_start_us) / 1e3;
    ++steps_;
  }
  std::vector<double> mean_ms() const {
    std::vector<double> out = sums_;
    for (double& ms : out) ms /= std::max<int64_t>(1, steps_);
    return out;
  }
  // The order in which the last step's gradients arrived, as DDP's reducer records it: two
  // gradients a microsecond apart keep their order here, where their times may tie.
  const std::vector<size_t>& order() const { return hooks_->order; }

 private:
  struct Hooks {  // written from the engine's thread
    std::vector<double> stamps;
    std::vector<size_t> order;
  };
  std::shared_ptr<Hooks> hooks_;
  std::vector<double> sums_;
  int64_t steps_ = 0;
};

// One checked step `ulps` from single-device training's: beyond kCheckUlps, measured against what
// the order of additions alone does to it (step_check.h).
void record_check(RunMeasurement& m, StepCheck& check, double ulps) {
  m.max_check_ulps = std::max(m.max_check_ulps.value_or(0), ulps);
  if (ulps <= kCheckUlps) return;
  const std::optional<double> order = check.order_ulps();
  if (order) m.check_order_ulps = std::max(m.check_order_ulps.value_or(0), *order);
}

// This rank's rows of a global batch, split as scatter splits it (chunk_sizes).
data::Batch rank_rows(const data::Batch& batch, const Communicator& comm) {
  const std::vector<int64_t> sizes = chunk_sizes(batch.y.size(0), comm.world_size());
  const size_t rank = static_cast<size_t>(comm.rank());
  int64_t start = 0;
  for (size_t r = 0; r < rank && r < sizes.size(); ++r) start += sizes[r];
  const int64_t rows = rank < sizes.size() ? sizes[rank] : 0;
  return {batch.x.narrow(0, start, rows).contiguous(), batch.y.narrow(0, start, rows).contiguous()};
}

double backward_start_us(const PhaseTimes& phases) {
  for (const PhaseEvent& e : phases.events) {
    if (e.phase == Phase::backward && e.track == 0) return e.start_us;
  }
  return 0;
}

// What the per-step check must reproduce of a ddp run's gradient compression (nothing otherwise).
CompressedRanks compressed_ranks(const DDPOptions& ddp, StrategyKind kind, int devices, Device first_device) {
  if (!is_ddp(kind) || ddp.grad_compression == GradCompression::none) return {};
  return {.format = ddp.grad_compression,
          .ranks = devices,
          .mean_of_means = ddp.mean_of_means,
          .first_device = first_device};
}

}  // namespace

Experiment::Experiment(ExperimentConfig config, data::TensorDataset train)
    : config_(std::move(config)), train_(std::move(train)) {
  DUET_CHECK(config_.make_optimizer, "Experiment: needs an optimizer factory");
  DUET_CHECK(config_.batch_size > 0 && config_.steps > 0 && config_.warmup >= 0,
             "Experiment: batch_size and steps must be positive and warmup >= 0, got ", config_.batch_size, ", ",
             config_.steps, ", ", config_.warmup);
  DUET_CHECK(train_.size() > 0, "Experiment: the training set is empty");
  if (!config_.make_model) (void)nn::models::make(config_.model);  // an unknown name fails here
  // Read the whole set once: otherwise the first run alone pays for faulting its pages in (the
  // same batches come back in every run), and single-device training, which runs first and is
  // what the cost model starts from, measured slower than the same step under dp on 1 device.
  NoGradGuard no_grad;
  (void)sum(train_.images);
}

std::shared_ptr<nn::Module> Experiment::new_model() const {
  if (!config_.make_model) return nn::models::make(config_.model);
  std::shared_ptr<nn::Module> model = config_.make_model();
  DUET_CHECK(model, "Experiment: make_model returned no model");
  return model;
}

RunMeasurement Experiment::run(const StrategyRun& run, const std::function<void(int64_t, int64_t)>& on_step) {
  DUET_CHECK(run.devices >= 1, "Experiment: ", run.strategy, " needs at least one device, got ", run.devices);
  const bool across_processes = config_.comm && runs_across_processes(run.strategy);
  const int devices = run.strategy == StrategyKind::single ? 1
                      : across_processes                   ? config_.comm->world_size()
                                                           : run.devices;
  const int64_t batch_size = run.batch_size > 0 ? run.batch_size : config_.batch_size;
  std::vector<Device> group;
  if (across_processes) {
    group.push_back(config_.comm->device());
  } else {
    for (int i = 0; i < devices; ++i) group.push_back({config_.first_device.type, config_.first_device.index + i});
  }

  // Memory is counted from here: the model, its replicas, gradients, optimizer state and
  // activations, but not the dataset loaded before.
  std::vector<int64_t> baseline;
  for (Device d : group) {
    baseline.push_back(memory_stats(d).current);
    reset_peak_memory(d);
  }
  default_generator().manual_seed(config_.seed);  // the same initial weights for every run
  std::shared_ptr<nn::Module> model = new_model();
  model->to(group[0]);
  if (sizes_.parameter_bytes == 0) {
    std::vector<Tensor> params = model->parameters();
    std::vector<Tensor> buffers;
    for (const auto& [name, b] : model->named_buffers()) buffers.push_back(b);
    sizes_.parameter_bytes = bytes_of(params);
    sizes_.buffer_bytes = bytes_of(buffers);
    sizes_.parameter_count = static_cast<int64_t>(params.size());
    for (const Tensor& b : buffers) sizes_.buffer_count += b.defined() ? 1 : 0;
    std::vector<Tensor> broadcast = params;
    broadcast.insert(broadcast.end(), buffers.begin(), buffers.end());
    sizes_.dp_broadcast_messages = static_cast<int64_t>(transfers::coalesced_groups(broadcast).size());
    sizes_.dp_reduce_messages = static_cast<int64_t>(transfers::coalesced_groups(params).size());
    for (const auto& bucket :
         plan_buckets(params, mib(config_.ddp.first_bucket_mb), mib(config_.ddp.bucket_cap_mb)).buckets) {
      sizes_.bucket_bytes.push_back(bucket.numel * static_cast<int64_t>(element_size(bucket.dtype)));
    }
  }
  StrategyOptions options;
  options.ddp = config_.ddp;
  options.loss_fn = config_.loss_fn;
  if (across_processes) options.comm = config_.comm;
  else options.link = config_.link;
  std::unique_ptr<Strategy> strategy = make_strategy(run.strategy, model, config_.make_optimizer, group, options);
  const bool is_reference = !reference_ && run.strategy == StrategyKind::single;
  // The parameter differences compare runs over the same batches only.
  const bool comparable = is_reference || (reference_ && reference_->batch_size == batch_size);
  std::optional<GradReadyClock> ready_clock;
  if (run.strategy == StrategyKind::single) ready_clock.emplace(strategy->model().parameters());
  // The check's single-device step runs on a logical CPU device of its own, so that its memory
  // does not count as the run's; on GPUs it shares device 0 (docs/parallel-strategies.md).
  std::optional<StepCheck> check;
  const Device check_device = group[0].is_cpu() ? cpu(group.back().index + 1) : group[0];
  if (config_.check && (!across_processes || config_.comm->rank() == 0))
    check.emplace(new_model(), config_.make_optimizer, check_device, config_.loss_fn,
                  compressed_ranks(config_.ddp, run.strategy, devices, group[0]));
  // zero1 across processes: the check's copy of the optimizer state is gathered from every
  // rank's shard (ShardedOptimizer::state, a collective), which the other ranks join.
  const bool joins_state_gather = config_.check && across_processes && !check && run.strategy == StrategyKind::zero1;
  // Every replica against rank 0's, on every rank (across processes it is a collective).
  auto* ddp = dynamic_cast<DistributedDataParallel*>(strategy.get());
  if (!config_.check || (ddp && ddp->world_size() < 2)) ddp = nullptr;

  RunMeasurement m;
  m.strategy = run.strategy;
  m.devices = devices;
  m.batch_size = batch_size;
  for (Device d : group) m.device_names.push_back(d.str());
  if (across_processes) {
    m.device_names.clear();
    for (int r = 0; r < devices; ++r) m.device_names.push_back("rank " + std::to_string(r));
  }
  m.steps = config_.steps;

  // The same global batches for every run: the same seed gives the same order.
  data::DataLoaderOptions order;
  order.batch_size = batch_size;
  order.shuffle = true;
  order.seed = config_.seed;
  order.pin_memory = group[0].is_cuda();  // so the strategies' copies to the GPUs run asynchronously
  data::DataLoader loader(train_, order);
  // With the check, a run's steps are checked first and timed after, never both: the check's
  // single-device step between two steps evicts the devices' caches, which slowed the next step
  // although the check's own time was taken out (docs/parallel-strategies.md, the equivalence
  // metric). So the check covers the first warmup + steps steps, and the timed steps follow
  // them, after warm-up steps of their own.
  const int64_t checked_steps = config_.check ? config_.warmup + config_.steps : 0;
  const int64_t timed_from = checked_steps + config_.warmup;
  const int64_t total = timed_from + config_.steps;
  int64_t done = 0;
  double images = 0;  // in the timed steps
  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now();
  Clock::time_point step_start = start;
  while (done < total) {
    for (const data::Batch& batch : loader) {
      const Clock::time_point now = Clock::now();
      if (done == timed_from) start = now;
      // The previous timed step's wall time: from its start to this one's.
      if (done > timed_from) m.step_ms.push_back(ms_between(step_start, now));
      step_start = now;
      const bool checked = done < checked_steps;
      if (checked && check) {
        check->before(*strategy, batch);
      } else if (checked && joins_state_gather) {
        (void)strategy->optimizer().state();
      }
      if (ready_clock) ready_clock->start_step();
      StepResult r = strategy->train_step(across_processes ? rank_rows(batch, *config_.comm) : batch);
      if (checked && check) record_check(m, *check, check->after(*strategy));
      if (checked && ddp) {
        m.replicas_checked = true;
        std::string divergence = ddp->replica_divergence();
        if (!divergence.empty() && !m.replica_divergence) m.replica_divergence = std::move(divergence);
      }
      const PhaseTimes& phases = strategy->last_phases();
      m.events.insert(m.events.end(), phases.events.begin(), phases.events.end());
      m.comm_events.insert(m.comm_events.end(), phases.comm_events.begin(), phases.comm_events.end());
      if (done >= timed_from) {
        for (size_t i = 0; i < kNumPhases; ++i) m.phase_ms[i] += phases.ms[i];
        m.bytes_per_step += static_cast<double>(phases.bytes_moved);
        m.overlap.add(phases.overlap);
        images += static_cast<double>(r.count);
        if (ready_clock) ready_clock->add_step(backward_start_us(phases));
      }
      m.final_loss = r.loss;
      ++done;
      if (done == 1) {
        std::vector<std::vector<double>> params = parameter_values(strategy->model());
        if (is_reference) reference_first_step_params_ = params;
        if (comparable && !reference_first_step_params_.empty()) {
          m.first_step_param_diff = max_abs_diff(params, reference_first_step_params_);
        }
      }
      if (on_step) on_step(done, total);
      if (done == total) break;
    }
  }
  const Clock::time_point end = Clock::now();
  m.step_ms.push_back(ms_between(step_start, end));
  m.seconds = std::chrono::duration<double>(end - start).count();
  const double steps = static_cast<double>(config_.steps);
  m.images_per_second = images / std::max(m.seconds, 1e-9);
  m.ms_per_step = m.seconds * 1e3 / steps;
  for (double& ms : m.phase_ms) ms /= steps;
  m.bytes_per_step /= steps;
  auto* replicas = dynamic_cast<DistributedDataParallel*>(strategy.get());
  for (size_t i = 0; i < group.size(); ++i) {
    const optim::Optimizer* optimizer = replicas ? &replicas->replica_optimizer(i)
                                        : i == 0 ? &strategy->optimizer()
                                                 : nullptr;
    m.memory.push_back({.device = group[i].str(),
                        .peak_bytes = memory_stats(group[i]).peak - baseline[i],
                        .optimizer_state_bytes = optimizer ? optimizer->state_bytes() : 0});
  }

  if (ready_clock) {
    m.grad_ready_ms = ready_clock->mean_ms();
    m.grad_ready_order = ready_clock->order();
  }
  std::vector<std::vector<double>> params = parameter_values(strategy->model());
  if (is_reference) {
    reference_ = m;
    reference_params_ = params;
  }
  if (comparable) m.max_param_diff = max_abs_diff(params, reference_params_);
  return m;
}

bool check_passed(const RunMeasurement& m) {
  return m.max_check_ulps && step_passes(*m.max_check_ulps, m.check_order_ulps);
}

double forward_slowdown(const RunMeasurement& run, const RunMeasurement& single) {
  const size_t forward = static_cast<size_t>(Phase::forward);
  if (run.devices < 1 || run.batch_size <= 0 || single.batch_size <= 0 || single.phase_ms[forward] <= 0) return 0;
  const int64_t rows = (run.batch_size + run.devices - 1) / run.devices;
  return run.phase_ms[forward] / static_cast<double>(rows) /
         (single.phase_ms[forward] / static_cast<double>(single.batch_size));
}

StepProfile Experiment::profile() const {
  DUET_CHECK(reference_, "Experiment: the cost model needs a single-device run first");
  return profile(*reference_);
}

StepProfile Experiment::profile(const RunMeasurement& single) const {
  DUET_CHECK(single.strategy == StrategyKind::single && !single.grad_ready_ms.empty(),
             "Experiment::profile: needs a single-device run of this experiment, got ", single.strategy);
  StepProfile p = sizes_;
  p.forward_ms = single.phase_ms[static_cast<size_t>(Phase::forward)];
  p.loss_ms = single.phase_ms[static_cast<size_t>(Phase::loss)];
  p.backward_ms = single.phase_ms[static_cast<size_t>(Phase::backward)];
  p.step_ms = single.phase_ms[static_cast<size_t>(Phase::step)];
  p.batch_size = single.batch_size;
  double phases = 0;
  for (double ms : single.phase_ms) phases += ms;
  p.other_ms = std::max(0.0, single.ms_per_step - phases);
  const int64_t image_bytes = train_.images.numel() / train_.size() * static_cast<int64_t>(sizeof(float));
  p.input_bytes = p.batch_size * image_bytes;
  // The model's output per example, from one example's forward (without a graph, in eval mode,
  // so that nothing of the model changes; it is a fresh copy anyway).
  std::shared_ptr<nn::Module> model = new_model();
  {
    NoGradGuard no_grad;
    model->eval();
    const Tensor row = model->forward(train_.images.narrow(0, 0, 1).to(DType::f32));
    p.output_bytes = p.batch_size * row.nbytes();
  }
  p.grad_ready_ms = single.grad_ready_ms;
  // DDP's buckets as its rebuild plans them after the first step (DistributedDataParallel::
  // rebuild_buckets): in the order the gradients arrived, those that never came last, from the
  // last parameter back.
  std::vector<Tensor> params = model->parameters();
  std::vector<size_t> order = single.grad_ready_order;
  std::vector<bool> listed(params.size(), false);
  for (size_t i : order) listed[i] = true;
  for (size_t i = params.size(); i-- > 0;) {
    if (!listed[i]) order.push_back(i);
  }
  for (const auto& bucket :
       plan_buckets(params, mib(config_.ddp.first_bucket_mb), mib(config_.ddp.bucket_cap_mb), order).buckets) {
    std::vector<size_t> members;
    for (const auto& entry : bucket.entries) members.push_back(entry.param);
    p.arrival_buckets.push_back(std::move(members));
  }
  for (const Tensor& t : params) p.parameter_sizes.push_back(t.nbytes());
  p.gradient_wire_factor = static_cast<double>(wire_bytes(1, DType::f32, config_.ddp.grad_compression)) / 4.0;
  return p;
}

}  // namespace duet::parallel
