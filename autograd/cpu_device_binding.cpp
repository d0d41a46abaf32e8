#include "duet/autograd/cpu_device_binding.h"

#include <pthread.h>

#include <memory>
#include <mutex>
#include <vector>

#include "duet/core/cpu_affinity.h"
#include "duet/core/error.h"
#include "duet/core/placement.h"
#include "duet/kernels/cpu/thread_pool.h"

namespace duet::autograd {
namespace {

// The devices' pools, made for one placement on first use, and made again for the next one.
// A thread still bound to an old pool keeps it alive until it binds again.
struct DevicePools {
  std::mutex mutex;
  uint64_t generation = 0;
  std::vector<std::shared_ptr<kernels::cpu::ThreadPool>> pools;  // pools[i]: cpu:i's
};
DevicePools& device_pools() {
  static DevicePools instance;
  return instance;
}

struct Binding {
  int device = -1;  // the logical CPU device this thread works for; -1: none
  uint64_t generation = 0;
};
thread_local Binding t_binding;

// (Re)binds the calling thread to cpu:index (-1: to no device).
void bind(int index) {
  if (t_binding.device == index && t_binding.generation == cpu_placement_generation()) return;
  const CpuPlacement placement = cpu_placement();
  std::shared_ptr<kernels::cpu::ThreadPool> pool;
  std::vector<int> cores;
  if (index >= 0 && static_cast<size_t>(index) < placement.cores.size()) {
    cores = placement.cores[static_cast<size_t>(index)];
    DevicePools& all = device_pools();
    std::lock_guard lock(all.mutex);
    if (all.generation != placement.generation) {
      all.pools.clear();
      all.pools.resize(placement.cores.size());
      all.generation = placement.generation;
    }
    std::shared_ptr<kernels::cpu::ThreadPool>& made = all.pools[static_cast<size_t>(index)];
    if (!made) made = std::make_shared<kernels::cpu::ThreadPool>(static_cast<int>(cores.size()), cores);
    pool = made;
  }
  pin_thread(pthread_self(), cores);
  kernels::cpu::use_thread_pool(std::move(pool));
  t_binding = {index, placement.generation};
}

}  // namespace

void bind_thread_to_cpu_device(int index) {
  DUET_CHECK(index >= 0, "bind_thread_to_cpu_device: expected a device index >= 0, got ", index);
  bind(index);
}

CpuDeviceScope::CpuDeviceScope(int index) : previous_(t_binding.device) { bind_thread_to_cpu_device(index); }
CpuDeviceScope::~CpuDeviceScope() { bind(previous_); }

}  // namespace duet::autograd
