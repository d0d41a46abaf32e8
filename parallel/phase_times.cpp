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
    case Phase::scatter:
      return "scatter";
    case Phase::broadcast:
      return "broadcast";
    case Phase::buffer_sync:
      return "buffer_sync";
    case Phase::forward:
      return "forward";
    case Phase::gather:
      return "gather";
    case Phase::loss:
      return "loss";
    case Phase::backward:
      return "backward";
    case Phase::all_reduce:
      return "all_reduce";
    case Phase::step:
      return "step";
  }
  return "?";
}

double PhaseTimes::total_ms() const { return std::accumulate(ms.begin(), ms.end(), 0.0); }

void PhaseTimes::merge_max(const PhaseTimes& other) {
  for (size_t i = 0; i < kNumPhases; ++i) ms[i] = std::max(ms[i], other.ms[i]);
  bytes_moved += other.bytes_moved;
  events.insert(events.end(), other.events.begin(), other.events.end());
  comm_events.insert(comm_events.end(), other.comm_events.begin(), other.comm_events.end());
  overlap.add(other.overlap);
}

void CommOverlap::add(const CommOverlap& other) {
  busy_ms += other.busy_ms;
  exposed_ms += other.exposed_ms;
  bytes += other.bytes;
  hidden_bytes += other.hidden_bytes;
  samples += other.samples;
}

CommOverlap overlap_of(const std::vector<CommEvent>& events, double last_gradient_us, double backward_end_us) {
  CommOverlap out{.samples = 1};
  double previous_finish = 0, waited = 0;
  for (const CommEvent& e : events) {
    const double start = std::max(e.launch_us, previous_finish);
    out.busy_ms += std::max(0.0, e.finish_us - start) / 1000;
    out.exposed_ms += std::max(0.0, e.finish_us - std::max(start, backward_end_us)) / 1000;
    waited += e.wait_for_last_launch_us;
    out.bytes += static_cast<double>(e.bytes);
    if (e.finish_us - waited <= last_gradient_us) out.hidden_bytes += static_cast<double>(e.bytes);
    previous_finish = e.finish_us;
  }
  return out;
}

void set_launch_waits(std::vector<std::vector<CommEvent>*> per_rank) {
  if (per_rank.empty()) return;
  const size_t count = per_rank[0]->size();
  for (const auto* events : per_rank) {
    if (events->size() != count) return;  // not the same collectives: leave the waits unknown
  }
  for (size_t k = 0; k < count; ++k) {
    double last_launch = 0;
    for (const auto* events : per_rank) last_launch = std::max(last_launch, (*events)[k].launch_us);
    for (auto* events : per_rank) {
      const double could_start = std::max((*events)[k].launch_us, k > 0 ? (*events)[k - 1].finish_us : 0.0);
      (*events)[k].wait_for_last_launch_us = std::max(0.0, last_launch - could_start);
    }
  }
}

std::chrono::steady_clock::time_point trace_clock_origin() {
  static const std::chrono::steady_clock::time_point origin = std::chrono::steady_clock::now();
  return origin;
}

double trace_us(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::micro>(t - trace_clock_origin()).count();
}

void PhaseTimer::lap(Phase phase) {
  Clock::time_point start = last_;
  const double ms = lap_ms(phase);
  times_.events.push_back({phase, track_, trace_us(start), ms * 1000});
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
