#include "duet/parallel/lab/step_overhead.h"

#include <algorithm>
#include <numeric>

#include "duet/core/error.h"

namespace duet::parallel {

double typical_mean(std::vector<double> values) {
  DUET_CHECK(!values.empty(), "typical_mean: no values");
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  const double median = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  const auto typical = std::upper_bound(values.begin(), values.end(), 10 * median);
  return std::accumulate(values.begin(), typical, 0.0) / static_cast<double>(typical - values.begin());
}

std::vector<StepOverhead> measure_step_overhead(ExperimentConfig config, data::TensorDataset examples,
                                                const std::vector<StrategyRun>& runs, Links links,
                                                const StepOverheadProbe& probe) {
  DUET_CHECK(!config.comm, "measure_step_overhead: in one process only");
  DUET_CHECK(probe.rows_per_device > 0 && probe.steps > 0 && probe.warmup >= 0,
             "measure_step_overhead: rows_per_device and steps must be positive and warmup >= 0");
  int most = 1;
  for (const StrategyRun& run : runs) most = std::max(most, run.devices);
  config.batch_size = probe.rows_per_device * most;
  config.steps = probe.steps;
  config.warmup = probe.warmup;
  config.check = false;
  links.compute_slowdown = 1;
  links.step_overhead_ms.clear();
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
