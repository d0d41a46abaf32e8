// Which device counts a scaling sweep of logical CPU devices can run on this machine: each
// device needs cores of its own (place_cpu_devices, core/placement.h), so a count the cores cannot
// serve is left out, with a message, rather than measured as devices taking turns.
#pragma once

#include <string>
#include <vector>

namespace duet::parallel {

struct SweepPlan {
  int cores_per_device = 0;
  std::vector<int> device_counts;    // those the cores serve, ascending, without repeats
  std::vector<std::string> skipped;  // one message per count left out
};

// `cores`: how many this process may use. cores_per_device 0 takes the default: the cores
// divided among the largest count asked for, at least 1. Throws for a count below 1, or no
// counts at all.
SweepPlan plan_sweep(std::vector<int> counts, int cores, int cores_per_device);

}  // namespace duet::parallel
