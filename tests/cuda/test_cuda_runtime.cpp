// The CUDA runtime scaffolding: device discovery, the caching allocator's accounting and reuse,
// its out-of-memory error, virtual devices' separate accounting, and the device guard's restore.
#include <cuda_runtime_api.h>
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cuda_test_util.h"
#include "duet/autograd/factory.h"
#include "duet/core/allocator.h"
#include "duet/kernels/cuda/device.h"
#include "duet/kernels/cuda/runtime.h"
#include "duet/kernels/kernels.h"

using namespace duet;
using Catch::Matchers::Contains;

TEST_CASE("the CUDA runtime reports a built backend and a usable device", "[cuda]") {
  CHECK(cuda::is_built());
  REQUIRE(cuda::device_count() >= 1);
  Storage s(64, cuda_device(0));
  CHECK(s.data() != nullptr);
}

TEST_CASE("the caching allocator accounts current, peak and reserved bytes and reuses blocks", "[cuda]") {
  const Device dev = cuda_device(0);
  cuda::empty_cache();  // no cached block of any size, so the first request must reach cudaMalloc
  reset_peak_memory(dev);
  const MemoryStats before = memory_stats(dev);
  // An odd size in the large pool, rounded up to a 2 MiB multiple (3 MiB + 1000 -> 4 MiB).
  const size_t bytes = (size_t(3) << 20) + 1000, rounded = size_t(4) << 20;

  void* first_ptr = nullptr;
  {
    Storage s(bytes, dev);
    first_ptr = s.data();
    MemoryStats during = memory_stats(dev);
    CHECK(during.current == before.current + static_cast<int64_t>(bytes));
    CHECK(during.reserved == before.reserved + static_cast<int64_t>(rounded));
    CHECK(during.peak >= during.current);
    CHECK(during.allocations == before.allocations + 1);
  }
  MemoryStats freed = memory_stats(dev);
  CHECK(freed.current == before.current);
  CHECK(freed.reserved == before.reserved + static_cast<int64_t>(rounded));  // kept in the cache
  CHECK(freed.peak == before.current + static_cast<int64_t>(bytes));

  SECTION("a request in the same bin reuses the cached block without new reservation") {
    Storage again(bytes - 500, dev);
    CHECK(again.data() == first_ptr);
    CHECK(memory_stats(dev).reserved == freed.reserved);
    CHECK(memory_stats(dev).current == before.current + static_cast<int64_t>(bytes - 500));
  }
  SECTION("a request in another bin gets a fresh block") {
    Storage other(bytes + rounded, dev);
    CHECK(other.data() != first_ptr);
    CHECK(memory_stats(dev).reserved == freed.reserved + static_cast<int64_t>(2 * rounded));
  }
  SECTION("small requests round to 512 bytes and share a bin") {
    void* small_ptr = nullptr;
    {
      Storage a(1000, dev);
      small_ptr = a.data();
    }
    Storage b(1024, dev);  // 1000 and 1024 both round to 1024
    CHECK(b.data() == small_ptr);
  }
  SECTION("empty_cache returns cached blocks to the driver") {
    cuda::empty_cache();
    CHECK(memory_stats(dev).reserved == before.reserved);
    CHECK(memory_stats(dev).current == before.current);
  }
}

TEST_CASE("a tensor's storage on CUDA round-trips through the host", "[cuda]") {
  test::TensorPair p = test::random_pair({1000}, DType::f32, -1, 1, 7);
  Tensor back = test::copy_to(p.cuda, cpu());
  test::require_identical(back, p.cpu, "host -> cuda -> host");
}

TEST_CASE("CUDA out of memory is a duet::Error naming the request, and the device stays usable", "[cuda]") {
  const size_t huge = size_t(1) << 50;  // 1 PiB: more than any GPU
  REQUIRE_THROWS_WITH(Storage(huge, cuda_device(0)),
                      Contains("out of memory") && Contains(std::to_string(huge)) && Contains("reserved"));
  CHECK(cudaPeekAtLastError() == cudaSuccess);  // the failed cudaMalloc is not left to a later check
  // The failure is not sticky: later allocations and kernels work.
  test::GuardedOutput out({257}, DType::f32, cuda_device(0));
  kernels::fill(out.view(), 2.5);
  Tensor host = out.check_and_fetch();
  CHECK(host.data<float>()[0] == 2.5f);
  CHECK(host.data<float>()[256] == 2.5f);
}

// ~DeviceGuard cannot throw, so a failed switch back is ignored; it used to stay behind as the
// thread's last error, which the next kernel launch's check (cudaGetLastError) then reported as
// its own failure. A GPU index that does not exist makes cudaSetDevice fail on any machine, one
// GPU included, without touching the current device.
TEST_CASE("a failed device restore leaves no error behind as the thread's last error", "[cuda]") {
  int gpus = 0;
  REQUIRE(cudaGetDeviceCount(&gpus) == cudaSuccess);
  int before = -1;
  REQUIRE(cudaGetDevice(&before) == cudaSuccess);
  // The provocation is real: a bare cudaSetDevice, as the old ~DeviceGuard made, leaves it behind.
  REQUIRE(cudaSetDevice(gpus) == cudaErrorInvalidDevice);
  REQUIRE(cudaPeekAtLastError() == cudaErrorInvalidDevice);
  REQUIRE(cudaGetLastError() == cudaErrorInvalidDevice);

  cuda::restore_device(gpus);
  CHECK(cudaPeekAtLastError() == cudaSuccess);
  int after = -1;
  REQUIRE(cudaGetDevice(&after) == cudaSuccess);
  CHECK(after == before);
  // And the next launch's check does not report it.
  test::GuardedOutput out({33}, DType::f32, cuda_device(0));
  kernels::fill(out.view(), 1.0);
  CHECK(out.check_and_fetch().data<float>()[32] == 1.0f);
}

TEST_CASE("an index beyond the CUDA devices is a clear error", "[cuda]") {
  REQUIRE_THROWS_WITH(Storage(16, cuda_device(cuda::device_count())), Contains("cannot use"));
}

// Devices, not GPUs: it runs on two GPUs (multigpu: ) and, on one, as four logical devices of it
// (cuda-virtual: , DUET_CUDA_VIRTUAL_DEVICES=4), where each keeps its own pool and stream.
TEST_CASE("each CUDA device keeps its own memory accounting and copies reach the other", "[cuda][multigpu][virtual]") {
  REQUIRE(cuda::device_count() >= 2);
  const Device d0 = cuda_device(0), d1 = cuda_device(1);
  const MemoryStats before0 = memory_stats(d0), before1 = memory_stats(d1);
  {
    Storage on1(12345, d1);
    CHECK(memory_stats(d1).current == before1.current + 12345);
    CHECK(memory_stats(d0).current == before0.current);
    CHECK(memory_stats(d0).reserved == before0.reserved);
  }
  CHECK(memory_stats(d1).current == before1.current);

  test::TensorPair p = test::random_pair({3, 257}, DType::f64, -5, 5, 11);
  Tensor on1 = test::copy_to(p.cuda, d1);  // cuda:0 -> cuda:1
  test::GuardedOutput out({3, 257}, DType::f32, d0);
  kernels::copy(on1.as_strided({3, 257}, {257, 1}, 0), out.view());  // cuda:1 -> cuda:0 with a cast
  Tensor expected = test::empty_tensor({3, 257}, DType::f32, cpu());
  kernels::copy(p.cpu, expected);
  test::require_identical(out.check_and_fetch(), expected, "cuda:0 -> cuda:1 -> cuda:0 (f64 -> f32)");
}

// ~DeviceGuard used to switch back to the thread's previous device, GPU 0 by default, which
// creates a context there (hundreds of MB) in a process that only uses cuda:1: every MPI rank
// but the first, every --device cuda:1 run, and the pinned allocator on a loader's thread.
// Needs two physical GPUs (ctest runs it alone, in a process that has not touched GPU 0).
TEST_CASE("a process that uses only cuda:1 creates no context on GPU 0", "[cuda][multigpu]") {
  REQUIRE(cuda::device_count() >= 2);
  REQUIRE_FALSE(cuda::virtual_devices());
  REQUIRE_FALSE(cuda::has_context(0));
  const Device d1 = cuda_device(1);
  std::thread loader([&] {  // a thread that never chose a GPU, as a DataLoader's worker
    Tensor pinned = empty({4096}, {.pin_memory = true});
    Tensor on1 = test::copy_to(pinned, d1);
    cuda::synchronize(d1);
  });
  loader.join();
  Tensor on1 = test::empty_tensor({1000}, DType::f32, d1);
  kernels::fill(on1, 1.0);
  cuda::synchronize(d1);
  CHECK(cuda::has_context(1));
  CHECK_FALSE(cuda::has_context(0));
}
