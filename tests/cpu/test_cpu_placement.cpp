// Logical CPU devices with cores of their own: the cores each device owns (core/placement.h),
// and threads bound to a device (autograd/cpu_device_binding.h): pinned to its cores, their loops
// on a pool of its own; the fallback to sharing when the cores are not there.
#include <pthread.h>

#include <catch2/catch.hpp>
#include <thread>

#include "duet/autograd/cpu_device_binding.h"
#include "duet/autograd/factory.h"
#include "duet/autograd/ops.h"
#include "duet/core/cpu_affinity.h"
#include "duet/core/placement.h"
#include "duet/kernels/cpu/thread_pool.h"
#include "duet/kernels/kernels.h"

using namespace duet;
using autograd::bind_thread_to_cpu_device;
using autograd::CpuDeviceScope;
using kernels::cpu::pool_size;

namespace {

std::vector<int> this_thread_cores() { return thread_cores(pthread_self()); }

// Restores the shared pool whatever the test did.
struct SharedAfterwards {
  ~SharedAfterwards() { share_cpu_devices(); }
};

}  // namespace

TEST_CASE("a placement gives each logical CPU device its own consecutive cores, from a first one", "[placement]") {
  const std::vector<int> machine{0, 1, 2, 3, 4, 5, 8, 9};  // ids need not be contiguous
  const CpuPlacement three = plan_cpu_placement(3, 2, 0, machine);
  CHECK(three.pinned());
  CHECK(three.cores_per_device == 2);
  CHECK(three.cores == std::vector<std::vector<int>>{{0, 1}, {2, 3}, {4, 5}});
  CHECK(three.note.empty());
  // An MPI rank's process takes its share from its first core on.
  CHECK(plan_cpu_placement(2, 1, 5, machine).cores == std::vector<std::vector<int>>{{5}, {8}});
  CHECK(plan_cpu_placement(1, 3, 5, machine).cores == std::vector<std::vector<int>>{{5, 8, 9}});
  // One core too many: nobody owns any, and the note says why.
  const CpuPlacement short_of_one = plan_cpu_placement(2, 2, 5, machine);
  CHECK_FALSE(short_of_one.pinned());
  CHECK(short_of_one.cores_per_device == 0);
  CHECK_THAT(short_of_one.note,
             Catch::Contains("need 9 cores") && Catch::Contains("may run on 8") && Catch::Contains("share one pool"));
  REQUIRE_THROWS_WITH(plan_cpu_placement(0, 1, 0, machine), Catch::Contains("devices >= 1"));
  REQUIRE_THROWS_WITH(plan_cpu_placement(1, 0, 0, machine), Catch::Contains("cores_per_device >= 1"));
  REQUIRE_THROWS_WITH(plan_cpu_placement(1, 1, -1, machine), Catch::Contains("first_core >= 0"));
}

TEST_CASE("the process's placement: each new one is a new generation, and share_cpu_devices undoes it", "[placement]") {
  SharedAfterwards restore;
  const std::vector<int> cores = available_cores();
  REQUIRE(!cores.empty());
  const CpuPlacement placed = place_cpu_devices(1, 1);
  CHECK(placed.cores == std::vector<std::vector<int>>{{cores[0]}});
  CHECK(cpu_placement().cores == placed.cores);
  CHECK(cpu_placement_generation() == placed.generation);
  CHECK(cpu_device_cores(0) == std::vector<int>{cores[0]});
  CHECK(cpu_device_cores(1).empty());
  share_cpu_devices();
  CHECK_FALSE(cpu_placement().pinned());
  CHECK(cpu_placement_generation() > placed.generation);
  CHECK(cpu_device_cores(0).empty());
}

TEST_CASE("a logical CPU device with a core of its own runs its loops there, pinned", "[placement]") {
  SharedAfterwards restore;
  const std::vector<int> cores = available_cores();
  REQUIRE(!cores.empty());
  REQUIRE(place_cpu_devices(1, 1).pinned());

  const std::vector<int> before = this_thread_cores();
  {
    CpuDeviceScope scope(0);
    CHECK(pool_size() == 1);
    REQUIRE(kernels::cpu::thread_pool() != nullptr);
    CHECK(kernels::cpu::thread_pool()->cpus() == std::vector<int>{cores[0]});
    CHECK(this_thread_cores() == std::vector<int>{cores[0]});
    // Work still gets done, on the device's one thread.
    Tensor x = arange(0, 100000, 1, {.dtype = DType::f64});
    CHECK(sum(x).item<double>() == 100000.0 * 99999 / 2);
  }
  CHECK(this_thread_cores() == before);  // the scope gave the thread its mask back
  CHECK(kernels::cpu::thread_pool() == nullptr);
  CHECK(pool_size() == kernels::num_threads());
}

TEST_CASE("a device beyond the placed ones, or a thread bound to none, uses the shared pool", "[placement]") {
  SharedAfterwards restore;
  REQUIRE(place_cpu_devices(1, 1).pinned());
  std::thread other([] {
    bind_thread_to_cpu_device(5);
    CHECK(pool_size() == kernels::num_threads());
    CHECK(this_thread_cores() == available_cores());
  });
  other.join();
}

TEST_CASE("asking for more cores than the process has falls back to sharing and says why", "[placement]") {
  SharedAfterwards restore;
  const int have = static_cast<int>(available_cores().size());
  const CpuPlacement placement = place_cpu_devices(have + 1, 1);
  CHECK_FALSE(placement.pinned());
  CHECK(placement.cores_per_device == 0);
  CHECK_THAT(placement.note,
             Catch::Contains("need " + std::to_string(have + 1) + " cores") && Catch::Contains("share one pool"));
  CpuDeviceScope scope(0);
  CHECK(pool_size() == kernels::num_threads());
  REQUIRE_THROWS_WITH(place_cpu_devices(0, 1), Catch::Contains("devices >= 1"));
}

TEST_CASE("a thread bound to a device picks up a new placement when it binds again", "[placement]") {
  SharedAfterwards restore;
  const std::vector<int> cores = available_cores();
  REQUIRE(place_cpu_devices(1, 1).pinned());
  CpuDeviceScope scope(0);
  CHECK(pool_size() == 1);
  if (cores.size() >= 2) {
    REQUIRE(place_cpu_devices(1, 2).pinned());
    bind_thread_to_cpu_device(0);  // what a persistent thread does before each job
    CHECK(pool_size() == 2);
    CHECK(this_thread_cores() == std::vector<int>{cores[0], cores[1]});
  }
  share_cpu_devices();
  bind_thread_to_cpu_device(0);
  CHECK(pool_size() == kernels::num_threads());
}
