// Logical CPU devices with cores of their own (kernels/cpu/thread_pool.h): pools per device,
// threads bound to them, and the fallback to sharing when the cores are not there.
#include <pthread.h>
#include <sched.h>

#include <catch2/catch.hpp>
#include <thread>

#include "duet/autograd/factory.h"
#include "duet/autograd/ops.h"
#include "duet/kernels/cpu/thread_pool.h"
#include "duet/kernels/kernels.h"

using namespace duet;
namespace cpu_pool = duet::kernels::cpu;

namespace {

std::vector<int> this_thread_cores() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  REQUIRE(pthread_getaffinity_np(pthread_self(), sizeof mask, &mask) == 0);
  std::vector<int> cores;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &mask)) cores.push_back(c);
  }
  return cores;
}

// Restores the shared pool whatever the test did.
struct SharedAfterwards {
  ~SharedAfterwards() { cpu_pool::share_cpu_devices(); }
};

}  // namespace

TEST_CASE("a logical CPU device with a core of its own runs its loops there, pinned", "[placement]") {
  SharedAfterwards restore;
  const std::vector<int> cores = cpu_pool::available_cores();
  REQUIRE(!cores.empty());
  const cpu_pool::CpuPlacement placement = cpu_pool::place_cpu_devices(1, 1);
  REQUIRE(placement.pinned());
  CHECK(placement.note.empty());
  CHECK(placement.cores == std::vector<std::vector<int>>{{cores[0]}});

  const std::vector<int> before = this_thread_cores();
  {
    cpu_pool::CpuDeviceScope scope(0);
    CHECK(cpu_pool::pool_size() == 1);
    CHECK(this_thread_cores() == std::vector<int>{cores[0]});
    // Work still gets done, on the device's one thread.
    Tensor x = arange(0, 100000, 1, {.dtype = DType::f64});
    CHECK(sum(x).item<double>() == 100000.0 * 99999 / 2);
  }
  CHECK(this_thread_cores() == before);  // the scope gave the thread its mask back
  CHECK(cpu_pool::pool_size() == kernels::num_threads());
}

TEST_CASE("a device beyond the placed ones, or a thread bound to none, uses the shared pool", "[placement]") {
  SharedAfterwards restore;
  REQUIRE(cpu_pool::place_cpu_devices(1, 1).pinned());
  std::thread other([] {
    cpu_pool::bind_thread_to_cpu_device(5);
    CHECK(cpu_pool::pool_size() == kernels::num_threads());
    CHECK(this_thread_cores() == cpu_pool::available_cores());
  });
  other.join();
}

TEST_CASE("asking for more cores than the process has falls back to sharing and says why", "[placement]") {
  SharedAfterwards restore;
  const int have = static_cast<int>(cpu_pool::available_cores().size());
  const cpu_pool::CpuPlacement placement = cpu_pool::place_cpu_devices(have + 1, 1);
  CHECK_FALSE(placement.pinned());
  CHECK(placement.cores_per_device == 0);
  CHECK_THAT(placement.note,
             Catch::Contains("need " + std::to_string(have + 1) + " cores") && Catch::Contains("share one pool"));
  cpu_pool::CpuDeviceScope scope(0);
  CHECK(cpu_pool::pool_size() == kernels::num_threads());
  REQUIRE_THROWS_WITH(cpu_pool::place_cpu_devices(0, 1), Catch::Contains("devices >= 1"));
}

TEST_CASE("a new placement rebinds threads that were bound to the old one", "[placement]") {
  SharedAfterwards restore;
  const std::vector<int> cores = cpu_pool::available_cores();
  REQUIRE(cpu_pool::place_cpu_devices(1, 1).pinned());
  cpu_pool::CpuDeviceScope scope(0);
  CHECK(cpu_pool::pool_size() == 1);
  if (cores.size() >= 2) {
    REQUIRE(cpu_pool::place_cpu_devices(1, 2).pinned());
    CHECK(cpu_pool::pool_size() == 2);  // the stale binding is noticed at the next loop
  }
  cpu_pool::share_cpu_devices();
  CHECK(cpu_pool::pool_size() == kernels::num_threads());
}
