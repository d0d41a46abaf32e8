// PhaseTimes: where one training step's wall-clock time went, phase by phase, and how many
// bytes it moved between devices. Both data-parallel strategies fill one per step (see
// last_phases()), so `duet compare` can print them side by side (docs/parallel-strategies.md).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "duet/core/device.h"

namespace duet::parallel {

// The phases of a step, in the order they usually run. A strategy leaves the ones it does not
// have at 0: DataParallel never all-reduces, DDP never scatters, broadcasts parameters or
// gathers.
enum class Phase : uint8_t {
  scatter,      // A: split the batch over the devices
  broadcast,    // A: copy the master parameters and buffers to every device
  buffer_sync,  // B: copy rank 0's buffers (BatchNorm statistics) to the other ranks
  forward,
  gather,  // A: concatenate the outputs on device 0
  loss,
  backward,    // A: includes the reduce-add of the gradients onto device 0
  all_reduce,  // B: what is left of the bucket all-reduces after backward, then the copy-back
  step,        // the optimizer step(s)
};
inline constexpr size_t kNumPhases = 9;
const char* name(Phase phase);  // "scatter", "buffer_sync", ...

// One phase as it ran on one device, for `duet compare --trace`.
struct PhaseEvent {
  Phase phase;
  int track;        // the device's position in the strategy's device list
  double start_us;  // since trace_clock_origin()
  double duration_us;
};

// One collective on one rank's communication track (DDP's gradient buckets), for the trace and
// the overlap figures. Times in microseconds since trace_clock_origin().
struct CommEvent {
  std::string name;      // "bucket 2", "unused-parameter map"
  int track = 0;         // the rank's position in the strategy's device list
  double ready_us = 0;   // its data was complete (a bucket's last gradient arrived)
  double launch_us = 0;  // handed to the communicator (later than ready when an earlier bucket was not)
  double finish_us = 0;  // the communicator finished it
  int64_t bytes = 0;
  // How long this rank's collective waited for the last rank to launch the same collective
  // (from when it could start: its launch, or the previous collective's finish). Known where
  // every rank's launch is (ranks in one process); 0 otherwise.
  double wait_for_last_launch_us = 0;
};

// How much of a rank's all-reduce backward hid. The honest figure is in bytes: the share of
// the all-reduced bytes whose collective had finished before the rank's backward computed its
// last gradient, once the waits for the last rank to launch each collective (imbalance between
// ranks, not a lack of overlap) are taken out of the finish times; every wait delays the
// collectives after it too, since a communicator runs them one at a time. Beside it, the time:
// collective k is busy from max(its launch, the previous finish) to its finish, and what of
// that lies after backward() returned is exposed. Summed over ranks and steps.
struct CommOverlap {
  double busy_ms = 0;
  double exposed_ms = 0;
  double bytes = 0;
  double hidden_bytes = 0;
  int64_t samples = 0;  // rank-steps added up
  double hidden_share() const { return bytes > 0 ? hidden_bytes / bytes : 0; }
  void add(const CommOverlap& other);
};
// One rank's step: its collectives in launch order, when its backward computed its last
// gradient, and when backward() returned.
CommOverlap overlap_of(const std::vector<CommEvent>& events, double last_gradient_us, double backward_end_us);
// Fills every collective's wait_for_last_launch_us from all ranks' events of one step
// (per_rank[r]: rank r's, in the same launch order on every rank).
void set_launch_waits(std::vector<std::vector<CommEvent>*> per_rank);

struct PhaseTimes {
  std::array<double, kNumPhases> ms{};  // wall-clock milliseconds, indexed by Phase
  int64_t bytes_moved = 0;              // between devices, forward and backward
  std::vector<PhaseEvent> events;       // every lap, in the order they ended
  std::vector<CommEvent> comm_events;   // DDP's collectives, every rank's
  CommOverlap overlap;                  // DDP: summed over the ranks

  double& operator[](Phase phase) { return ms[static_cast<size_t>(phase)]; }
  double operator[](Phase phase) const { return ms[static_cast<size_t>(phase)]; }
  double total_ms() const;
  // Phase by phase maximum, bytes and overlap summed, events joined: the critical path of
  // ranks that run concurrently.
  void merge_max(const PhaseTimes& other);
};

// The common zero of every PhaseEvent's start: the first call to this function.
std::chrono::steady_clock::time_point trace_clock_origin();
// `t` in microseconds since trace_clock_origin().
double trace_us(std::chrono::steady_clock::time_point t);
// Now, in microseconds since trace_clock_origin().
inline double trace_now_us() { return trace_us(std::chrono::steady_clock::now()); }

// On a GPU the host queues kernels and moves on, so a phase timed on the host measures the
// queueing, not the work. With exact GPU phases on, every lap first waits for its timer's CUDA
// devices: phase times become the devices' times, at the cost of those waits (the host can no
// longer queue ahead across phases). `duet compare` and `duet train --profile` turn it on;
// plain training leaves it off. CPU devices are unaffected.
void set_exact_gpu_phases(bool on);
bool exact_gpu_phases();

// Measures consecutive phases on one thread: each lap(phase) adds the time since the previous
// lap (or since construction) to that phase, and records it as an event on `track`. `devices`
// are those the phases' work runs on (for exact GPU phases).
class PhaseTimer {
 public:
  explicit PhaseTimer(PhaseTimes& times, int track = 0, std::vector<Device> devices = {})
      : times_(times), track_(track), devices_(std::move(devices)), last_((trace_clock_origin(), Clock::now())) {}
  void lap(Phase phase);
  // The same, without the event: for a phase whose per-device events are recorded separately.
  void lap_untraced(Phase phase);

 private:
  double lap_ms(Phase phase);  // adds to the phase and moves on; the lap's start stays in `last_`
  using Clock = std::chrono::steady_clock;
  PhaseTimes& times_;
  int track_;
  std::vector<Device> devices_;
  Clock::time_point last_;
};

}  // namespace duet::parallel
