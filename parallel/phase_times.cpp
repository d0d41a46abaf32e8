#include "duet/parallel/phase_times.h"

#include <algorithm>
#include <atomic>
#include <numeric>

#include "duet/kernels/cuda/runtime.h"

namespace duet::parallel {
namespace {
std::atomic<bool> exact_phases{false};
}  // namespace

void set_exact_gpu_phases(bool on) { exact_phases = on; }
bool exact_gpu_phases() { return exact_phases; }

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
  events.insert(events.end(), other.events.begin(), other.events.end());
}

std::chrono::steady_clock::time_point trace_clock_origin() {
  static const std::chrono::steady_clock::time_point origin = std::chrono::steady_clock::now();
  return origin;
}

void PhaseTimer::lap(Phase phase) {
  using Micros = std::chrono::duration<double, std::micro>;
  Clock::time_point start = last_;
  const double ms = lap_ms(phase);
  times_.events.push_back({phase, track_, Micros(start - trace_clock_origin()).count(), ms * 1000});
}

void PhaseTimer::lap_untraced(Phase phase) { lap_ms(phase); }

double PhaseTimer::lap_ms(Phase phase) {
  if (exact_gpu_phases()) {
    for (Device d : devices_) cuda::synchronize(d);
  }
  Clock::time_point now = Clock::now();
  const double ms = std::chrono::duration<double, std::milli>(now - last_).count();
  times_[phase] += ms;
  last_ = now;
  return ms;
}

}  // namespace duet::parallel
