// How long one cache line takes to travel from one core to another: two threads, pinned to the
// first two cores this process may use, hand a counter back and forth. bench/cpu/run.py runs it
// around each measurement. On this project's 2-vCPU VM it reads 25 to 30 ns while the vCPUs
// share a cache, and about 165 ns for minutes at a time when the host places them apart; then
// whatever one core wrote costs the other six times as much to read (docs/performance.md).
// Prints {"cross_core_ns": ...}, or null where the process may run on one core only.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

namespace {

bool pin_to(int core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

// The counter handed over, alone on its cache line (and the next, which the prefetcher pairs).
struct alignas(128) Baton {
  std::atomic<int64_t> value{0};
};

// The median one-way latency, in ns, of `rounds` batches of round trips between `a` and `b`.
double one_way_ns(int a, int b, int rounds, int trips) {
  static Baton shared;
  std::atomic<int64_t>& baton = shared.value;
  baton = 0;
  const int64_t total = int64_t{rounds} * trips;
  std::thread partner([&baton, b, total] {
    pin_to(b);
    for (int64_t i = 0; i < total; ++i) {
      while (baton.load(std::memory_order_acquire) != 2 * i + 1) {
      }
      baton.store(2 * i + 2, std::memory_order_release);
    }
  });
  pin_to(a);
  std::vector<double> samples;
  for (int64_t r = 0, i = 0; r < rounds; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int t = 0; t < trips; ++t, ++i) {
      baton.store(2 * i + 1, std::memory_order_release);
      while (baton.load(std::memory_order_acquire) != 2 * i + 2) {
      }
    }
    const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
    samples.push_back(took.count() / trips / 2);
  }
  partner.join();
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

}  // namespace

int main() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  std::vector<int> cores;
  if (sched_getaffinity(0, sizeof mask, &mask) == 0) {
    for (int c = 0; c < CPU_SETSIZE && cores.size() < 2; ++c) {
      if (CPU_ISSET(c, &mask)) cores.push_back(c);
    }
  }
  nlohmann::json result = {{"cross_core_ns", nullptr}};
  if (cores.size() == 2) result["cross_core_ns"] = one_way_ns(cores[0], cores[1], 9, 4000);
  std::cout << result.dump() << std::endl;
  return 0;
}
