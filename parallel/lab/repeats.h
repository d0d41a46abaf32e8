// Repeated runs, and the one to report. A CPU's speed moves from second to second (other
// processes, the hypervisor's neighbours): two runs of the same strategy minutes apart differ by
// up to 20% on a VM, and single's run, which every prediction scales, by as much. Running the
// whole sweep several times over, interleaved, and reporting each run's median repeat takes the
// drift out of the comparison rather than into one strategy's figures.
#pragma once

#include <optional>
#include <vector>

#include "duet/parallel/lab/experiment.h"

namespace duet::parallel {

// The median of `values` (the mean of the middle two for an even count). Throws when empty.
double median(std::vector<double> values);

// Of one run's repeats, the one whose step time is the median (the lower middle one for an even
// count), whole: its phases, trace events and memory belong together. The per-step check's
// figures are over every repeat (the worst step, the largest effect of the order of additions,
// any replica that drifted), and it keeps every repeat's step time (repeat_ms_per_step). Throws
// when empty.
RunMeasurement median_repeat(std::vector<RunMeasurement> repeats);

// How far a run's repeats were apart: (slowest - fastest) / median of their ms per step; unset for
// fewer than 2 repeats. A prediction's error smaller than this says nothing either way.
std::optional<double> repeat_spread(const RunMeasurement& run);

}  // namespace duet::parallel
