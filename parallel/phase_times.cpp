#include "duet/parallel/phase_times.h"

#include <algorithm>
#include <numeric>

namespace duet::parallel {

const char* name(Phase phase) {
  switch (phase) {
    case Phase::scatter: return "scatter";
    case Phase::broadcast: return "broadcast";
    case Phase::buffer_sync: return "buffer_sync";
    case Phase::forward: return "forward";
    case Phase::gather: return "gather";
    case Phase::loss: return "loss";
    case Phase::backward: return "backward";
    case Phase::all_reduce: return "all_reduce";
    case Phase::step: return "step";
  }
  return "?";
}

double PhaseTimes::total_ms() const { return std::accumulate(ms.begin(), ms.end(), 0.0); }

void PhaseTimes::merge_max(const PhaseTimes& other) {
  for (size_t i = 0; i < kNumPhases; ++i) ms[i] = std::max(ms[i], other.ms[i]);
  bytes_moved += other.bytes_moved;
}

void PhaseTimer::lap(Phase phase) {
  Clock::time_point now = Clock::now();
  times_[phase] += std::chrono::duration<double, std::milli>(now - last_).count();
  last_ = now;
}

}  // namespace duet::parallel
