// PhaseTimes: where one training step's wall-clock time went, phase by phase, and how many
// bytes it moved between devices. Both data-parallel strategies fill one per step (see
// last_phases()), so `duet compare` can print them side by side (DESIGN.md section 6).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

namespace duet::parallel {

// The phases of a step, in the order they usually run. A strategy leaves the ones it does not
// have at 0: DataParallel never all-reduces, DDP never scatters, broadcasts parameters or
// gathers.
enum class Phase : uint8_t {
  scatter,      // A: split the batch over the devices
  broadcast,    // A: copy the master parameters and buffers to every device
  buffer_sync,  // B: copy rank 0's buffers (BatchNorm statistics) to the other ranks
  forward,
  gather,       // A: concatenate the outputs on device 0
  loss,
  backward,     // A: includes the reduce-add of the gradients onto device 0
  all_reduce,   // B: what is left of the bucket all-reduces after backward, then the copy-back
  step,         // the optimizer step(s)
};
inline constexpr size_t kNumPhases = 9;
const char* name(Phase phase);  // "scatter", "buffer_sync", ...

struct PhaseTimes {
  std::array<double, kNumPhases> ms{};  // wall-clock milliseconds, indexed by Phase
  int64_t bytes_moved = 0;              // between devices, forward and backward

  double& operator[](Phase phase) { return ms[static_cast<size_t>(phase)]; }
  double operator[](Phase phase) const { return ms[static_cast<size_t>(phase)]; }
  double total_ms() const;
  // Phase by phase maximum, bytes summed: the critical path of ranks that run concurrently.
  void merge_max(const PhaseTimes& other);
};

// Measures consecutive phases on one thread: each lap(phase) adds the time since the previous
// lap (or since construction) to that phase.
class PhaseTimer {
 public:
  explicit PhaseTimer(PhaseTimes& times) : times_(times), last_(Clock::now()) {}
  void lap(Phase phase);

 private:
  using Clock = std::chrono::steady_clock;
  PhaseTimes& times_;
  Clock::time_point last_;
};

}  // namespace duet::parallel
