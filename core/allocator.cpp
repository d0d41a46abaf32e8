#include "duet/core/allocator.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <new>

#include "duet/core/cpu_allocator.h"
#include "duet/core/error.h"

namespace duet {
namespace {

struct Counters {
  std::atomic<int64_t> current{0}, peak{0}, reserved{0}, allocations{0};
};

Counters& counters(Device device) {
  static std::array<std::array<Counters, kMaxDevicesPerType>, 2> table;
  DUET_CHECK(device.index >= 0 && device.index < kMaxDevicesPerType, "device index ", device.index, " out of range");
  return table[static_cast<size_t>(device.type)][static_cast<size_t>(device.index)];
}

std::array<std::atomic<Allocator*>, 2>& registry() {
  static std::array<std::atomic<Allocator*>, 2> table{&cpu_allocator(), nullptr};
  return table;
}

}  // namespace

Allocator& allocator_for(Device device) {
  Allocator* a = registry()[static_cast<size_t>(device.type)].load();
  if (!a) {
#ifdef DUET_HAS_CUDA
    DUET_FAIL("no allocator for ", device, ": the CUDA runtime was not initialised");
#else
    DUET_FAIL("cannot use ", device, ": duet was built without CUDA");
#endif
  }
  return *a;
}

void register_allocator(DeviceType type, Allocator* allocator) {
  registry()[static_cast<size_t>(type)].store(allocator);
}

namespace {
std::atomic<Allocator*>& pinned_registry() {
  static std::atomic<Allocator*> pinned{nullptr};
  return pinned;
}
}  // namespace

Allocator& pinned_allocator() {
  Allocator* a = pinned_registry().load();
  DUET_CHECK(a != nullptr, "cannot allocate pinned (page-locked) host memory: duet was built without CUDA");
  return *a;
}

void register_pinned_allocator(Allocator* allocator) { pinned_registry().store(allocator); }

MemoryStats memory_stats(Device device) {
  Counters& c = counters(device);
  return {c.current.load(), c.peak.load(), c.reserved.load(), c.allocations.load()};
}

void reset_peak_memory(Device device) {
  Counters& c = counters(device);
  c.peak.store(c.current.load());
}

void record_memory(Device device, int64_t bytes, int64_t reserved_delta) {
  Counters& c = counters(device);
  int64_t now = c.current.fetch_add(bytes) + bytes;
  c.reserved.fetch_add(reserved_delta);
  if (bytes > 0) c.allocations.fetch_add(1);
  int64_t peak = c.peak.load();
  while (now > peak && !c.peak.compare_exchange_weak(peak, now)) {
  }
}

}  // namespace duet
