#include "duet/parallel/lab/step_overhead.h"

#include <algorithm>
#include <numeric>

#include "duet/core/error.h"
#include "duet/parallel/lab/repeats.h"

namespace duet::parallel {

double typical_mean(std::vector<double> values) {
  DUET_CHECK(!values.empty(), "typical_mean: no values");
  const double middle = median(values);
  std::sort(values.begin(), values.end());
  const auto typical = std::upper_bound(values.begin(), values.end(), 10 * middle);
  return std::accumulate(values.begin(), typical, 0.0) / static_cast<double>(typical - values.begin());
}

std::vector<StepOverhead> measure_step_overhead(ExperimentConfig config, data::TensorDataset examples,
                                                const std::vector<StrategyRun>& runs, Links links,
                                                const StepOverheadProbe& probe) {
  DUET_CHECK(!config.comm, "measure_step_overhead: in one process only");
  DUET_CHECK(
      probe.rows_per_device > 0 && probe.min_steps > 0 && probe.max_steps >= probe.min_steps && probe.warmup >= 0,
      "measure_step_overhead: rows_per_device and min_steps must be positive, max_steps at least min_steps "
      "and warmup >= 0");
  int most = 1;
  for (const StrategyRun& run : runs) most = std::max(most, run.devices);
  config.batch_size = probe.rows_per_device * most;
  config.warmup = probe.warmup;
  config.check = false;
  links.compute_slowdown = 1;
  links.step_overhead_ms.clear();
  // A short single run sets the step count; the probe proper starts afresh with it.
  ExperimentConfig pilot = config;
  pilot.warmup = std::min<int64_t>(config.warmup, 1);
  pilot.steps = std::min<int64_t>(probe.min_steps, 3);
  const double pilot_ms = Experiment(pilot, examples).run({StrategyKind::single, 1}).ms_per_step;
  if (pilot_ms >= probe.negligible_above_ms) return {};
  config.steps = std::clamp(static_cast<int64_t>(probe.time_budget_ms / std::max(pilot_ms, 1e-3)), probe.min_steps,
                            probe.max_steps);
  Experiment experiment(std::move(config), std::move(examples));
  const RunMeasurement single = experiment.run({StrategyKind::single, 1});
  // The simulation reproduces the single run's mean step; a step of it that waited for a core
  // counts in that mean but not in the others' typical_mean, so it comes out of the simulation.
  const double single_excess_ms = single.ms_per_step - typical_mean(single.step_ms);
  std::vector<StepOverhead> out;
  for (const StrategyRun& run : runs) {
    if (run.strategy == StrategyKind::single) continue;
    const bool seen = std::any_of(out.begin(), out.end(), [&](const StepOverhead& o) {
      return o.strategy == run.strategy && o.devices == run.devices;
    });
    if (seen) continue;
    const RunMeasurement measured = experiment.run({run.strategy, run.devices});
    const SimulatedStep simulated =
        predict_step(run.strategy, run.devices, measured.batch_size, experiment.profile(), links);
    out.push_back({run.strategy, run.devices, typical_mean(measured.step_ms), simulated.step_ms - single_excess_ms});
  }
  return out;
}

}  // namespace duet::parallel
