#include "duet/core/placement.h"

#include <atomic>
#include <mutex>

#include "duet/core/cpu_affinity.h"
#include "duet/core/error.h"

namespace duet {
namespace {

struct PlacementState {
  std::mutex mutex;
  CpuPlacement placement;
  std::atomic<uint64_t> generation{0};  // placement.generation, readable without the lock
};
PlacementState& state() {
  static PlacementState instance;
  return instance;
}

CpuPlacement install(CpuPlacement placement) {
  PlacementState& s = state();
  std::lock_guard lock(s.mutex);
  placement.generation = s.generation.load() + 1;
  s.generation.store(placement.generation);
  s.placement = placement;
  return placement;
}

}  // namespace

CpuPlacement plan_cpu_placement(int devices, int cores_per_device, int first_core, const std::vector<int>& available) {
  DUET_CHECK(devices >= 1 && cores_per_device >= 1 && first_core >= 0,
             "place_cpu_devices: expected devices >= 1, cores_per_device >= 1 and first_core >= 0, got ", devices, ", ",
             cores_per_device, ", ", first_core);
  CpuPlacement placement;
  const int64_t needed = static_cast<int64_t>(first_core) + static_cast<int64_t>(devices) * cores_per_device;
  if (needed > static_cast<int64_t>(available.size())) {
    placement.note = std::to_string(devices) + " device(s) x " + std::to_string(cores_per_device) + " core(s)" +
                     (first_core ? " from core " + std::to_string(first_core) : std::string()) + " need " +
                     std::to_string(needed) + " cores, and this process may run on " +
                     std::to_string(available.size()) + ": the devices share one pool instead";
    return placement;
  }
  placement.cores_per_device = cores_per_device;
  for (int d = 0; d < devices; ++d) {
    auto begin = available.begin() + first_core + static_cast<int64_t>(d) * cores_per_device;
    placement.cores.emplace_back(begin, begin + cores_per_device);
  }
  return placement;
}

CpuPlacement place_cpu_devices(int devices, int cores_per_device, int first_core) {
  return install(plan_cpu_placement(devices, cores_per_device, first_core, available_cores()));
}

void share_cpu_devices() { install({}); }

CpuPlacement cpu_placement() {
  PlacementState& s = state();
  std::lock_guard lock(s.mutex);
  return s.placement;
}

uint64_t cpu_placement_generation() { return state().generation.load(); }

std::vector<int> cpu_device_cores(int index) {
  PlacementState& s = state();
  std::lock_guard lock(s.mutex);
  if (index < 0 || static_cast<size_t>(index) >= s.placement.cores.size()) return {};
  return s.placement.cores[static_cast<size_t>(index)];
}

void place_new_thread(std::thread& thread, int index) { pin_thread(thread.native_handle(), cpu_device_cores(index)); }

}  // namespace duet
