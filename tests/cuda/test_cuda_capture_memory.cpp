// Memory while a CUDA graph records (graph.h): a block freed during the recording stays in the
// graph's pool, since every replay may still use it, and nothing frees memory then (cudaFree
// and cudaFreeHost wait for the device, which would invalidate the recording).
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "duet/duet.h"
#include "duet/kernels/cuda/graph.h"
#include "duet/kernels/cuda/runtime.h"

using namespace duet;

TEST_CASE("a block freed while a graph records is not handed to an eager allocation", "[cuda]") {
  const Device gpu = cuda_device(0);
  const int64_t n = int64_t(1) << 20;
  Tensor before = zeros({n}, {.device = gpu});  // allocated before the recording
  const void* address = before.data_ptr();
  cuda::CapturedWork work(gpu);
  work.capture([&] {
    before.add_(ones({n}, {.device = gpu}));  // every replay writes it
    before = Tensor();                        // and it is freed during the recording
  });
  // Today's shared cache would hand exactly this block to the next eager tensor of its size.
  Tensor eager = zeros({n}, {.device = gpu});
  CHECK(eager.data_ptr() != address);
  work.replay();
  cuda::synchronize(gpu);
  CHECK(sum(eager).item<float>() == 0.0f);  // the replay wrote the graph's block, not this one
}

TEST_CASE("empty_cache() while a graph records frees nothing and keeps the recording valid", "[cuda]") {
  const Device gpu = cuda_device(0);
  Tensor x = ones({1000}, {.device = gpu});
  { Tensor cached = empty({int64_t(1) << 20}, {.device = gpu}); }       // a cached 4 MB device block
  { Tensor pinned = empty({int64_t(1) << 16}, {.pin_memory = true}); }  // a cached pinned block
  const MemoryStats before = memory_stats(gpu);
  cuda::CapturedWork work(gpu);
  CHECK_NOTHROW(work.capture([&] {
    x.mul_(2.0);
    cuda::empty_cache();
  }));
  CHECK(memory_stats(gpu).reserved >= before.reserved);  // nothing was freed
  work.replay();
  CHECK(x.to_vector<float>() == std::vector<float>(1000, 2.0f));
  cuda::empty_cache();  // after the recording it frees again: at least the cached 4 MB block
  CHECK(memory_stats(gpu).reserved <= before.reserved - (int64_t(1) << 22));
}
