// Experiment: trains several strategies from the same initial weights on the same global
// batches and measures each one: throughput, time per phase, bytes moved, memory per device,
// DDP's all-reduce time hidden behind backward, and whether each step is single-device
// training's step (step_check.h). `duet compare` is a front end for it; a C++ user can run one
// directly.
//
//   parallel::Experiment experiment(config, data::FashionMNIST::train());
//   auto single = experiment.run({StrategyKind::single, 1});
//   auto ddp = experiment.run({StrategyKind::ddp, 2});   // ddp.max_check_ulps: per step, vs single
//
// Any model, loss and dataset: config.make_model builds the model (a class of one's own),
// config.loss_fn is its loss, and the TensorDataset may hold any targets (f32 regression targets
// [N, K] as well as i64 labels [N]).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "duet/data/dataset.h"
#include "duet/parallel/distributed.h"
#include "duet/parallel/lab/cost_model.h"
#include "duet/parallel/phase_times.h"

namespace duet::parallel {

struct ExperimentConfig {
  std::string model = "lenet-relu";  // a bundled model (nn::models::names()), unless make_model is set
  // Builds the model, on the CPU: every run calls it once after seeding the generator with
  // `seed` (so every run starts from the same weights), and the per-step check once more for
  // its single-device copy. Set, it is used instead of `model`.
  std::function<std::shared_ptr<nn::Module>()> make_model;
  // The loss every strategy trains with (StrategyOptions::loss_fn); unset, cross-entropy.
  LossFn loss_fn;
  int64_t batch_size = 256;         // global
  int64_t steps = 100;              // timed steps
  int64_t warmup = 5;               // untimed steps before them (thread start-up, first allocations)
  uint64_t seed = 0;                // the initial weights and the batch order
  OptimizerFactory make_optimizer;  // required
  Device first_device = cpu(0);     // a run on N devices uses this one and the N-1 after it
  DDPOptions ddp;                   // for the ddp variants: bucket caps, sync_batchnorm, comm_timeout
  // dp and ddp in one process: an emulated interconnect between the devices (link_model.h).
  LinkModel link;
  // The per-step check (step_check.h): one more single-device step per step; for ddp also that
  // every replica equals rank 0's after every step. It covers a run's first warmup + steps
  // steps, and the timed ones come after them (warmup, then steps), so that no timed step
  // starts from caches the check's own step has just evicted.
  bool check = true;
  // Across processes (mpirun): this rank's communicator. The ddp variants then run one rank per
  // process, each on its rows of every global batch, and the per-step check runs on rank 0;
  // single runs wherever it is called (duet compare calls it on rank 0 only).
  std::shared_ptr<Communicator> comm;
};

struct StrategyRun {
  StrategyKind strategy = StrategyKind::single;
  int devices = 1;
  int64_t batch_size = 0;  // global; 0: the config's (weak scaling grows it with the devices)
};

struct DeviceMemory {
  std::string device;
  int64_t peak_bytes = 0;  // above what the device held before the run built its model
  // The optimizer state the device holds after the run (Optimizer::state_bytes): the whole
  // state on every ddp replica's device (and on dp's and single's device 0), 1/N of it under zero1.
  int64_t optimizer_state_bytes = 0;
};

struct RunMeasurement {
  StrategyKind strategy = StrategyKind::single;
  int devices = 1;
  int64_t batch_size = 0;                 // global
  std::vector<std::string> device_names;  // the trace's tracks, in the strategy's device order
  int64_t steps = 0;                      // timed
  double seconds = 0;                     // wall clock of the timed steps, data loading included
  double images_per_second = 0;
  double ms_per_step = 0;
  std::vector<double> step_ms;  // each timed step's wall time, its data loading included
  // With repeats (median_repeat): every repeat's ms_per_step, in the order they ran; empty for one.
  std::vector<double> repeat_ms_per_step;
  std::array<double, kNumPhases> phase_ms{};  // mean per timed step
  double bytes_per_step = 0;                  // between devices
  std::vector<DeviceMemory> memory;
  double final_loss = 0;  // the last step's (mean over its batch)
  // The per-step check's worst step, in float ulps (step_check.h); unset without the check.
  std::optional<double> max_check_ulps;
  // For the steps beyond kCheckUlps, the largest distance that reversing the batch's rows alone
  // moved single-device training's step (StepCheck::order_ulps; unset where every step was within
  // kCheckUlps). The run passes the check when its worst step does against it (check_passed).
  std::optional<double> check_order_ulps;
  // ddp on 2 devices or more, with the check: whether every replica's parameters equalled rank
  // 0's after every step (bitwise in one process, a checksum per rank across processes), and
  // if not, the first that drifted, with the step ("after step 1, the replica of rank 1 ...").
  bool replicas_checked = false;
  std::optional<std::string> replica_divergence;
  // max |p - p_single| over every parameter element, after the first step and after the last,
  // against the reference single-device run (when it trained on the same batches). Information only: training amplifies
  // roundings, so these grow over a run even for a correct strategy (the per-step check is the test).
  std::optional<double> first_step_param_diff;
  std::optional<double> max_param_diff;
  // single: when each parameter's gradient was ready in backward (ms after its start, mean over
  // the timed steps), and the order they arrived in at the last step; the cost model's input.
  std::vector<double> grad_ready_ms;
  std::vector<size_t> grad_ready_order;
  CommOverlap overlap;                 // DDP on 2 devices or more: what backward hid, timed steps
  std::vector<PhaseEvent> events;      // every step, the checked and warm-up ones included
  std::vector<CommEvent> comm_events;  // every step, the checked and warm-up ones included
};

// Whether a checked run passed: its worst step within kCheckUlps, or within kOrderFactor times the
// largest effect the order of additions had on its steps beyond that (step_check.h). Over the
// run rather than step by step: how far another order moves a step with Adam depends on whether
// some gradient element nearly cancels in it, 50 ulps at one step and 5,000 at the next. False
// without the check.
bool check_passed(const RunMeasurement& m);

// How much slower per row `run`'s devices computed their forward than `single`'s device did, in
// the run itself: its forward (the slowest device's; dp's holds its replica threads' start) per
// row of its largest shard, over single's per row. The cost model predicts from a timing before
// the run (duet compare's compute column); this says what the devices then met in it. 0 where
// either forward was not timed.
double forward_slowdown(const RunMeasurement& run, const RunMeasurement& single);

class Experiment {
 public:
  Experiment(ExperimentConfig config, data::TensorDataset train);

  // Trains `run.strategy` on run.devices devices for warmup + steps batches, checking every
  // step (config.check). The first single-device run becomes the reference that later runs'
  // max_param_diff compares against, and whose compute the cost model starts from: its phases,
  // and when each parameter's gradient was ready in its backward. on_step(done, total)
  // reports progress.
  RunMeasurement run(const StrategyRun& run, const std::function<void(int64_t, int64_t)>& on_step = {});

  // What the cost model needs, from the reference single-device run; throws if there was none.
  StepProfile profile() const;
  // The same from another single-device run of this experiment (say, the median of repeats).
  StepProfile profile(const RunMeasurement& single) const;
  const ExperimentConfig& config() const { return config_; }

 private:
  // A fresh model: config.make_model's, or the bundled config.model.
  std::shared_ptr<nn::Module> new_model() const;

  ExperimentConfig config_;
  data::TensorDataset train_;
  std::optional<RunMeasurement> reference_;
  std::vector<std::vector<double>> reference_params_;             // after the last step
  std::vector<std::vector<double>> reference_first_step_params_;  // after the first
  StepProfile sizes_;                                             // the model's byte counts, filled by the first run
};

}  // namespace duet::parallel
