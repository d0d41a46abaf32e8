// What a strategy's step costs beyond what the event simulation prices (step_prediction.h): its
// threads waking one another (replica threads, the backward engine's device workers, DDP's
// communication thread), its per-step bookkeeping, its copies into and out of buckets, and the
// per-operation costs of the compute that do not shrink with the shard. On a step of tens of
// milliseconds they vanish; on a step of 2 ms they are a fifth of it.
//
// They are measured, not assumed: the same model trains a few steps at a batch of a couple of
// rows per device, where there is almost nothing to compute, under single and under each
// strategy; the simulation predicts those steps from that single-device run as it predicts the
// real ones; what it misses there (measured - simulated) is the strategy's overhead on that many
// devices, and is added to its predicted step at any batch. Each side takes typical_mean of its
// steps, so that a step which waited for another process's core enters neither.
#pragma once

#include <cstdint>
#include <vector>

#include "duet/data/dataset.h"
#include "duet/parallel/lab/experiment.h"
#include "duet/parallel/lab/step_prediction.h"

namespace duet::parallel {

struct StepOverhead {
  StrategyKind strategy = StrategyKind::dp;
  int devices = 1;
  double measured_ms = 0;   // its step at the probe's batch
  double simulated_ms = 0;  // the simulation's, from the probe's single-device run (its typical steps)
  double ms() const { return measured_ms - simulated_ms; }
};

// The mean of `values` without those over 10 times their median. A probe step of a fraction of
// a millisecond now and then waits for a core that another process holds, up to hundreds of
// milliseconds on a loaded machine; the mean would carry that into every prediction. The median
// would leave out the small delays that every real step has too, and came out short.
// Throws when empty.
double typical_mean(std::vector<double> values);

struct StepOverheadProbe {
  int64_t rows_per_device = 2;  // of the largest device count: the probe's global batch
  // As many steps as fit in time_budget_ms of single's step at the probe's batch (timed over
  // min_steps first), from min_steps to max_steps: a 0.3 ms mlp step gets 100, a resnet18 step
  // of 100 ms the minimum, which keeps the probe a fraction of the sweep.
  int64_t min_steps = 10;
  int64_t max_steps = 100;
  double time_budget_ms = 300;
  int64_t warmup = 5;
  // Where single's step at the probe's batch takes this long, a strategy's overhead (a
  // millisecond at most on the machines measured) is within the noise of any of its steps: no
  // probe then (resnet18 on a CPU).
  double negligible_above_ms = 20;
};

// Runs single on 1 device, then every strategy of `runs` but single at its device count, with
// `config` (its model, optimizer, options and link; its batch, steps and check replaced by the
// probe's) on `examples` (a few are enough: the loader goes round them), and simulates each
// from the single run over `links` (its compute slowdown taken as 1, no overhead added). In
// one process only: config.comm must be unset. Empty where the step is too long for the overhead
// to matter (negligible_above_ms).
std::vector<StepOverhead> measure_step_overhead(ExperimentConfig config, data::TensorDataset examples,
                                                const std::vector<StrategyRun>& runs, Links links,
                                                const StepOverheadProbe& probe = {});

}  // namespace duet::parallel
