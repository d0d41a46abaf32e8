#include "duet/parallel/lab/scaling_sweep.h"

#include <algorithm>

#include "duet/core/error.h"

namespace duet::parallel {

SweepPlan plan_sweep(std::vector<int> counts, int cores, int cores_per_device) {
  DUET_CHECK(!counts.empty(), "plan_sweep: no device counts given");
  DUET_CHECK(cores >= 1, "plan_sweep: expected at least 1 core, got ", cores);
  DUET_CHECK(cores_per_device >= 0, "plan_sweep: cores per device must be 0 (the default) or more, got ",
             cores_per_device);
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  DUET_CHECK(counts.front() >= 1, "plan_sweep: a device count must be at least 1, got ", counts.front());
  SweepPlan plan;
  plan.cores_per_device = cores_per_device > 0 ? cores_per_device : std::max(1, cores / counts.back());
  for (int n : counts) {
    if (static_cast<int64_t>(n) * plan.cores_per_device <= cores) {
      plan.device_counts.push_back(n);
    } else {
      plan.skipped.push_back("skipping " + std::to_string(n) + " devices: " + std::to_string(n) + " x " +
                             std::to_string(plan.cores_per_device) + " core(s) need " +
                             std::to_string(static_cast<int64_t>(n) * plan.cores_per_device) +
                             " cores, and this process may use " + std::to_string(cores));
    }
  }
  return plan;
}

}  // namespace duet::parallel
