// Where the logical CPU devices run: which cores each of cpu:0..N-1 owns.
//
// By default no device owns a core: every device's loops share the kernels' one pool. A
// placement (place_cpu_devices) gives each device cores of its own, so that N devices compute
// side by side as N GPUs would, instead of taking turns on one pool
// (docs/parallel-strategies.md, "CPU devices with cores of their own"). A thread that works for
// cpu:i is then pinned to cpu:i's cores and runs its loops on a pool of cpu:i's size pinned to
// them; autograd/cpu_device_binding.h binds threads that way.
#pragma once

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace duet {

struct CpuPlacement {
  int cores_per_device = 0;             // 0: every device shares the one pool (the default)
  std::vector<std::vector<int>> cores;  // cores[i]: the CPU ids cpu:i owns
  std::string note;                     // why the devices share, when cores were asked for but missing
  uint64_t generation = 0;              // changes with every placement: what was built for an older one is stale
  bool pinned() const { return !cores.empty(); }
};

// Gives cpu:0..devices-1 `cores_per_device` consecutive cores each of `available`, from its
// `first_core`-th on (a process of an MPI job takes its share this way). When `available` has
// too few, nobody owns a core, and the note says why. Checks its arguments; changes nothing.
CpuPlacement plan_cpu_placement(int devices, int cores_per_device, int first_core, const std::vector<int>& available);

// Makes plan_cpu_placement(devices, cores_per_device, first_core, available_cores()) the
// process's placement, replacing any earlier one.
CpuPlacement place_cpu_devices(int devices, int cores_per_device, int first_core = 0);
// Back to no device owning a core.
void share_cpu_devices();
CpuPlacement cpu_placement();
// cpu_placement().generation without copying the placement: cheap enough to ask before every job.
uint64_t cpu_placement_generation();
// The cores cpu:index owns; none when it owns none (an index beyond the placed devices included).
std::vector<int> cpu_device_cores(int index);

// Moves `thread`, just started by the caller to work for cpu:index, onto that device's cores
// from outside, before the thread binds itself. A new thread inherits its creator's cores: when
// the creator is pinned to a busy core, the new thread would first wait there for a time slice
// before it could move itself (docs/results.md: DataParallel's second replica started late).
void place_new_thread(std::thread& thread, int index);

}  // namespace duet
