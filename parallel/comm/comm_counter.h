// The process's count of bytes and messages that the communication ops (comm_ops.h) moved
// between devices, forward and backward, so `duet compare` can report bytes per step. Communicators
// keep their own per-rank CommStats.
#pragma once

#include <atomic>
#include <cstdint>

namespace duet::parallel {

class CommCounter {
 public:
  // One message of `bytes` between two devices.
  void add(int64_t bytes) noexcept {
    bytes_.fetch_add(bytes, std::memory_order_relaxed);
    messages_.fetch_add(1, std::memory_order_relaxed);
  }
  int64_t bytes_moved() const noexcept { return bytes_.load(std::memory_order_relaxed); }
  int64_t messages() const noexcept { return messages_.load(std::memory_order_relaxed); }
  // Starts a new count; returns the old byte count, so a step can read and reset in one go.
  int64_t reset() noexcept {
    messages_.store(0, std::memory_order_relaxed);
    return bytes_.exchange(0, std::memory_order_relaxed);
  }

 private:
  std::atomic<int64_t> bytes_{0};  // relaxed: pure tallies, ordering nothing
  std::atomic<int64_t> messages_{0};
};

// The one counter of this process. Safe to use from any thread (the engine's device workers
// run the ops' backward).
CommCounter& comm_counter();

}  // namespace duet::parallel
