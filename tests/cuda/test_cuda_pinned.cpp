// Pinned host memory and asynchronous host-to-device copies: allocation and accounting, copies
// that deliver exactly the host's bytes, and a freed or rewritten pinned block that must not
// change what a copy still in flight reads.
//
// To keep a copy in flight long enough to test it, the stream is first loaded with large
// matmuls (about half a second of H100/H200 time): the copy queues behind them.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "duet/core/allocator.h"
#include "duet/duet.h"
#include "duet/kernels/cuda/runtime.h"

using namespace duet;
using Catch::Matchers::Contains;

namespace {

const Device kGpu = cuda_device(0);

// Queues long-running work on kGpu's stream and returns at once (kernels are asynchronous).
// The result is kept alive by the caller so that nothing waits for it early.
Tensor keep_gpu_busy() {
  Generator gen(5);
  Tensor a = randn({8192, 8192}, {.device = kGpu}, &gen);
  Tensor out = a;
  for (int i = 0; i < 30; ++i) out = matmul(a, a);
  return out;
}

// Leaves a free block for n floats in kGpu's cache, so that copying n floats there later needs
// no cudaMalloc. That, and cudaHostAlloc, may wait for the GPU to go idle: both must happen
// before keep_gpu_busy(), or the copy under test would find an idle GPU and finish at once.
void cache_gpu_block(int64_t n) { empty({n}, {.device = kGpu}); }

bool all_equal(const Tensor& t, float value) {
  std::vector<float> values = t.to_vector<float>();
  for (float v : values)
    if (v != value) return false;
  return true;
}

}  // namespace

TEST_CASE("pinned host memory: accounting, pin_memory() and reuse of a freed block", "[cuda]") {
  const Device host = cpu(0);
  const MemoryStats before = memory_stats(host);
  void* first = nullptr;
  {
    Tensor t = empty({1000}, {.pin_memory = true});
    CHECK(t.is_pinned());
    CHECK(t.device() == host);
    CHECK(memory_stats(host).current == before.current + 4000);
    first = t.data_ptr();
  }
  CHECK(memory_stats(host).current == before.current);
  // Nothing reads the freed block, so the next request of its bin gets it back.
  CHECK(empty({1000}, {.pin_memory = true}).data_ptr() == first);

  Tensor values = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor pinned = values.t().pin_memory();
  CHECK(pinned.is_pinned());
  CHECK(pinned.to_vector<float>() == std::vector<float>{1, 4, 2, 5, 3, 6});
  REQUIRE_THROWS_WITH(values.to(kGpu).pin_memory(),
                      Contains("pin_memory: only host tensors can be pinned, got f32[2, 3] on cuda:0"));
}

TEST_CASE("copies from pinned memory to a GPU deliver the host's exact bytes", "[cuda]") {
  for (int64_t n : {int64_t{1}, int64_t{1000}, (int64_t{1} << 24) + 3}) {
    Generator gen(static_cast<uint64_t>(n));
    Tensor host = randn({n}, {}, &gen);
    Tensor pinned = host.pin_memory();
    Tensor on_gpu = pinned.to(kGpu);  // asynchronous
    test::require_identical(on_gpu.to(cpu()), host, "f32[" + std::to_string(n) + "] pinned -> cuda:0");
  }
  // Other dtypes, a strided pinned source (staged through a dense copy, so synchronous), a cast,
  // and a strided CUDA destination (copied dense, then scattered on the device).
  Tensor labels = from_vector<int64_t>({3, 1, 4, 1, 5, 9, 2, 6}).pin_memory();
  CHECK(labels.to(kGpu).to(cpu()).to_vector<int64_t>() == labels.to_vector<int64_t>());
  Tensor grid = arange(0, 12).reshape({3, 4}).pin_memory();
  CHECK(grid.t().to(kGpu).to(cpu()).to_vector<float>() == grid.t().contiguous().to_vector<float>());
  Tensor wide = zeros({3, 4}, {.dtype = DType::f64, .device = kGpu});
  wide.copy_(grid);
  CHECK(wide.to(cpu()).to(DType::f32).to_vector<float>() == grid.to_vector<float>());
  Tensor strided_dst = zeros({4, 3}, {.device = kGpu}).t();
  strided_dst.copy_(grid);
  CHECK(strided_dst.to(cpu()).contiguous().to_vector<float>() == grid.to_vector<float>());
}

TEST_CASE("a freed pinned block is not reused while a copy still reads it", "[cuda]") {
  const int64_t n = int64_t{1} << 20;
  Tensor src = full({n}, 1.0, {.pin_memory = true});
  cache_gpu_block(n);
  Tensor busy = keep_gpu_busy();
  void* block = src.data_ptr();
  Tensor dst = src.to(kGpu);  // queued behind the matmuls
  src = Tensor();             // freed at once, its copy still pending
  Tensor next = empty({n}, {.pin_memory = true});
  CHECK(next.data_ptr() != block);
  float* raw = next.data<float>();
  for (int64_t i = 0; i < n; ++i) raw[i] = 2.0f;  // a raw write: nothing waits for it
  CHECK(all_equal(dst, 1.0f));                    // to(cpu) waits for the stream
  // The copy is done: the block is free for reuse now.
  CHECK(empty({n}, {.pin_memory = true}).data_ptr() == block);
}

TEST_CASE("an in-place write to a pinned tensor waits for the copy that reads it", "[cuda]") {
  const int64_t n = int64_t{1} << 20;
  Tensor src = full({n}, 1.0, {.pin_memory = true});
  cache_gpu_block(n);
  Tensor busy = keep_gpu_busy();
  Tensor dst = src.to(kGpu);
  src.fill_(2.0);  // must wait until the copy has read the ones
  CHECK(all_equal(dst, 1.0f));
  CHECK(all_equal(src, 2.0f));
}

TEST_CASE("cuda::empty_cache returns cached pinned blocks to the driver", "[cuda]") {
  { Tensor t = empty({4096}, {.pin_memory = true}); }
  const MemoryStats cached = memory_stats(cpu(0));
  cuda::empty_cache();
  CHECK(memory_stats(cpu(0)).reserved < cached.reserved);
  CHECK(memory_stats(cpu(0)).current == cached.current);
}
