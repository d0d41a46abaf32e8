// The CPU allocator's accounting and its cache of freed blocks.
#include <catch2/catch.hpp>

#include "duet/core/cpu_allocator.h"
#include "duet/duet.h"

using namespace duet;

namespace {
// A logical device no other test uses, so its counters start from nothing.
const Device kDevice = cpu(kMaxDevicesPerType - 1);
}  // namespace

TEST_CASE("CPU memory accounting: current and peak follow live tensors", "[core]") {
  release_cached_cpu_memory(kDevice);
  const MemoryStats before = memory_stats(kDevice);
  reset_peak_memory(kDevice);
  {
    Tensor a = empty({1000}, {.device = kDevice});
    CHECK(memory_stats(kDevice).current == before.current + 4000);
    {
      Tensor b = empty({500}, {.device = kDevice});
      CHECK(memory_stats(kDevice).peak == before.current + 6000);
    }
    CHECK(memory_stats(kDevice).current == before.current + 4000);
  }
  CHECK(memory_stats(kDevice).current == before.current);
  CHECK(memory_stats(kDevice).peak == before.current + 6000);
}

TEST_CASE("the CPU allocator reuses a freed block of the same size", "[core]") {
  if (!cpu_cache_enabled()) {
    SUCCEED("the cache is off in this build (AddressSanitizer) or by DUET_CPU_CACHE=0");
    return;
  }
  release_cached_cpu_memory(kDevice);
  const int64_t reserved = memory_stats(kDevice).reserved;
  const void* first = nullptr;
  {
    Tensor a = empty({1000}, {.device = kDevice});
    first = a.data_ptr();
  }
  // Freed into the cache: still reserved, no longer current.
  CHECK(memory_stats(kDevice).reserved == reserved + 4032);  // 4000 rounded up to 64 bytes
  {
    Tensor b = empty({1000}, {.device = kDevice});
    CHECK(b.data_ptr() == first);
    CHECK(memory_stats(kDevice).reserved == reserved + 4032);
    Tensor c = empty({1000}, {.device = kDevice});  // the cache is empty again: a fresh block
    CHECK(memory_stats(kDevice).reserved == reserved + 2 * 4032);
  }
  release_cached_cpu_memory(kDevice);
  CHECK(memory_stats(kDevice).reserved == reserved);
}
