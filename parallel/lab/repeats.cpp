#include "duet/parallel/lab/repeats.h"

#include <algorithm>

#include "duet/core/error.h"

namespace duet::parallel {

double median(std::vector<double> values) {
  DUET_CHECK(!values.empty(), "median: no values");
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

RunMeasurement median_repeat(std::vector<RunMeasurement> repeats) {
  DUET_CHECK(!repeats.empty(), "median_repeat: no repeats");
  std::vector<double> ms_per_step;
  for (const RunMeasurement& r : repeats) ms_per_step.push_back(r.ms_per_step);
  std::stable_sort(repeats.begin(), repeats.end(),
                   [](const RunMeasurement& a, const RunMeasurement& b) { return a.ms_per_step < b.ms_per_step; });
  RunMeasurement out = repeats[(repeats.size() - 1) / 2];
  for (const RunMeasurement& r : repeats) {
    if (r.max_check_ulps) out.max_check_ulps = std::max(out.max_check_ulps.value_or(0), *r.max_check_ulps);
    if (r.check_order_ulps) out.check_order_ulps = std::max(out.check_order_ulps.value_or(0), *r.check_order_ulps);
    out.replicas_checked = out.replicas_checked || r.replicas_checked;
    if (r.replica_divergence && !out.replica_divergence) out.replica_divergence = r.replica_divergence;
  }
  if (ms_per_step.size() > 1) out.repeat_ms_per_step = std::move(ms_per_step);
  return out;
}

std::optional<double> repeat_spread(const RunMeasurement& run) {
  if (run.repeat_ms_per_step.size() < 2) return std::nullopt;
  const auto [fastest, slowest] = std::minmax_element(run.repeat_ms_per_step.begin(), run.repeat_ms_per_step.end());
  return (*slowest - *fastest) / median(run.repeat_ms_per_step);
}

}  // namespace duet::parallel
