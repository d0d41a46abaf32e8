#include "duet/core/cpu_affinity.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <thread>

namespace duet {
namespace {

// The process's affinity mask as it was before any thread was pinned, captured once.
const cpu_set_t& process_mask() {
  static const cpu_set_t mask = [] {
    cpu_set_t m;
    CPU_ZERO(&m);
    if (sched_getaffinity(0, sizeof m, &m) != 0) {
      for (unsigned i = 0; i < std::max(1u, std::thread::hardware_concurrency()) && i < CPU_SETSIZE; ++i)
        CPU_SET(i, &m);
    }
    return m;
  }();
  return mask;
}

// Set once anything was pinned: from then on a thread given no cores gets the process's mask back
// explicitly.
std::atomic<bool> g_ever_pinned{false};

std::vector<int> cores_in(const cpu_set_t& mask) {
  std::vector<int> cores;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &mask)) cores.push_back(c);
  }
  return cores;
}

}  // namespace

std::vector<int> available_cores() { return cores_in(process_mask()); }

std::vector<int> thread_cores(pthread_t thread) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (pthread_getaffinity_np(thread, sizeof mask, &mask) != 0) return {};
  return cores_in(mask);
}

void pin_thread(pthread_t thread, const std::vector<int>& cores) {
  if (cores.empty()) {
    if (g_ever_pinned.load()) (void)pthread_setaffinity_np(thread, sizeof(cpu_set_t), &process_mask());
    return;
  }
  (void)process_mask();  // captured before the first pin changes what a new thread inherits
  g_ever_pinned = true;
  cpu_set_t m;
  CPU_ZERO(&m);
  for (int c : cores) CPU_SET(c, &m);
  (void)pthread_setaffinity_np(thread, sizeof m, &m);
}

}  // namespace duet
