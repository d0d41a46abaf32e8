// The CUDA caching allocator: cudaMalloc in a training loop is slow and synchronising, so
// freed blocks are kept per logical device and handed out again for requests of the same size
// bin on the same stream.
//
// Reuse is stream-aware: a block is recorded with the stream it was allocated for and is only
// reused there, so work queued on that stream before the free is ordered before the new owner's
// work. (Using a block on a second stream would need a record_stream/event step; nothing does
// that yet, since every device has exactly one stream.)
//
// Blocks are never split: training allocates the same shapes every step, so exact bins reuse
// well, and the driver hands out large allocations in 2 MiB pages anyway.
//
// Private pools (private_pool.h) keep a CUDA graph's memory apart: a block belongs to the pool
// that was active when it was first allocated, and returns only to that pool's cache.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "duet/core/allocator.h"
#include "duet/core/error.h"
#include "duet/kernels/cuda/check.h"
#include "duet/kernels/cuda/device.h"
#include "duet/kernels/cuda/pinned_allocator.h"
#include "duet/kernels/cuda/private_pool.h"
#include "duet/kernels/cuda/runtime.h"

namespace duet::cuda {
namespace {

// Small pool: up to 1 MiB, in 512-byte bins. Large pool: 2 MiB bins (the driver's page size
// for big allocations, so the rounding costs no extra device memory).
constexpr size_t kSmallPoolLimit = size_t(1) << 20;
constexpr size_t kSmallBin = 512;
constexpr size_t kLargeBin = size_t(2) << 20;

size_t bin_size(size_t bytes) {
  size_t bin = bytes <= kSmallPoolLimit ? kSmallBin : kLargeBin;
  return (bytes + bin - 1) / bin * bin;
}

constexpr int kSharedPool = 0;

struct Block {
  size_t size;          // bytes obtained from cudaMalloc (the bin size)
  cudaStream_t stream;  // the stream it was allocated for; reused only there
  int pool;             // kSharedPool, or the private pool it belongs to
};

using BinKey = std::tuple<int, cudaStream_t, size_t>;  // pool, stream, size

// The blocks of one logical device. Virtual devices share a GPU but keep separate pools,
// so their accounting stays separate.
struct DevicePool {
  std::mutex mutex;
  std::map<BinKey, std::vector<void*>> cached;  // free blocks by (pool, stream, size)
  std::unordered_map<void*, Block> live;        // blocks owned by tensors
  int active_pool = kSharedPool;                // where allocations come from now
  int last_pool = kSharedPool;                  // the newest private pool's id

  // The active pool, with a cached block of `size` for `stream` taken from it (null if none).
  std::pair<int, void*> take_cached(cudaStream_t stream, size_t size) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cached.find({active_pool, stream, size});
    if (it == cached.end() || it->second.empty()) return {active_pool, nullptr};
    void* ptr = it->second.back();
    it->second.pop_back();
    live.emplace(ptr, Block{size, stream, active_pool});
    return {active_pool, ptr};
  }

  void add_live(void* ptr, const Block& block) {
    std::lock_guard<std::mutex> lock(mutex);
    live.emplace(ptr, block);
  }

  // Moves a live block to the cache; false if `ptr` was not allocated here. A shared block freed
  // while a graph records the device joins that graph's pool: the graph may use it at every
  // replay, so no eager allocation may get it while the graph lives (graph.h).
  bool give_back(void* ptr) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = live.find(ptr);
    if (it == live.end()) return false;
    if (it->second.pool == kSharedPool) it->second.pool = active_pool;
    cached[{it->second.pool, it->second.stream, it->second.size}].push_back(ptr);
    live.erase(it);
    return true;
  }

  // Removes the shared pool's cached blocks and returns them with their sizes, for cudaFree.
  // Private pools keep theirs: a graph may still replay into them.
  std::vector<std::pair<void*, size_t>> take_all_cached() {
    std::lock_guard<std::mutex> lock(mutex);
    std::vector<std::pair<void*, size_t>> out;
    for (auto it = cached.begin(); it != cached.end();) {
      if (std::get<0>(it->first) != kSharedPool) {
        ++it;
        continue;
      }
      for (void* p : it->second) out.emplace_back(p, std::get<2>(it->first));
      it = cached.erase(it);
    }
    return out;
  }

  int begin_private() {
    std::lock_guard<std::mutex> lock(mutex);
    DUET_CHECK(active_pool == kSharedPool, "a CUDA graph is already being recorded on this device");
    active_pool = ++last_pool;
    return active_pool;
  }

  void end_private() {
    std::lock_guard<std::mutex> lock(mutex);
    active_pool = kSharedPool;
  }

  bool recording() {
    std::lock_guard<std::mutex> lock(mutex);
    return active_pool != kSharedPool;
  }

  // Hands a private pool's blocks, cached and live, over to the shared pool.
  void release_private(int pool) {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto it = cached.begin(); it != cached.end();) {
      if (std::get<0>(it->first) != pool) {
        ++it;
        continue;
      }
      auto& shared = cached[{kSharedPool, std::get<1>(it->first), std::get<2>(it->first)}];
      shared.insert(shared.end(), it->second.begin(), it->second.end());
      it = cached.erase(it);
    }
    for (auto& [ptr, block] : live)
      if (block.pool == pool) block.pool = kSharedPool;
  }
};

class CachingAllocator final : public Allocator {
 public:
  void* allocate(size_t bytes, Device device) override {
    if (bytes == 0) return nullptr;  // nothing to point at; deallocate(nullptr) is a no-op
    check_device(device);
    size_t size = bin_size(bytes);
    cudaStream_t s = stream(device);
    DevicePool& p = pool(device);
    auto [from_pool, cached] = p.take_cached(s, size);
    if (cached) {
      record_memory(device, static_cast<int64_t>(bytes), 0);
      return cached;
    }
    void* ptr = malloc_from_driver(bytes, size, device);
    p.add_live(ptr, Block{size, s, from_pool});
    record_memory(device, static_cast<int64_t>(bytes), static_cast<int64_t>(size));
    return ptr;
  }

  void deallocate(void* ptr, size_t bytes, Device device) override {
    if (!ptr) return;
    if (!pool(device).give_back(ptr)) {
      // Called from Storage's destructor, which cannot throw; a foreign pointer means memory
      // corruption, so stop here rather than carry on.
      std::fprintf(stderr, "duet: CUDA caching allocator asked to free %p on %s, which it never allocated\n", ptr,
                   device.str().c_str());
      std::abort();
    }
    record_memory(device, -static_cast<int64_t>(bytes), 0);
  }

  DevicePool& pool(Device device) { return pools_[static_cast<size_t>(device.index)]; }

  // Frees the cached (unused) blocks of one logical device.
  void release_cached(Device device) {
    auto blocks = pool(device).take_all_cached();
    if (blocks.empty()) return;
    DeviceGuard guard(device);
    for (auto& [ptr, size] : blocks) {
      // cudaFree waits for the device, so pending kernels on the block's stream finish first.
      DUET_CUDA_CHECK(cudaFree(ptr));
      record_memory(device, 0, -static_cast<int64_t>(size));
    }
  }

 private:
  // cudaMalloc, retried once after freeing the caches of every logical device on the same GPU.
  void* malloc_from_driver(size_t bytes, size_t size, Device device) {
    DeviceGuard guard(device);
    void* ptr = nullptr;
    cudaError_t status = cudaMalloc(&ptr, size);
    // Not while a graph records on this GPU: cudaFree waits for the whole device, which
    // invalidates the capture.
    if (status == cudaErrorMemoryAllocation && !recording_on_gpu(physical_device(device.index))) {
      cudaGetLastError();  // clear it before retrying
      release_cached_on_gpu(physical_device(device.index));
      status = cudaMalloc(&ptr, size);
    }
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      MemoryStats stats = memory_stats(device);
      size_t free_bytes = 0, total_bytes = 0;
      ignore_cuda_error(cudaMemGetInfo(&free_bytes, &total_bytes));  // for the message only
      DUET_FAIL("CUDA out of memory on ", device, ": failed to allocate ", bytes, " bytes (", size, " with rounding); ",
                device, " has ", stats.current, " bytes in use by tensors and ", stats.reserved,
                " reserved by the caching allocator; the GPU has ", free_bytes, " of ", total_bytes, " bytes free");
    }
    DUET_CUDA_CHECK(status);
    return ptr;
  }

 public:
  bool recording_on_gpu(int physical) {
    for (int i = 0; i < device_count(); ++i)
      if (physical_device(i) == physical && pools_[static_cast<size_t>(i)].recording()) return true;
    return false;
  }

 private:
  void release_cached_on_gpu(int physical) {
    for (int i = 0; i < device_count(); ++i)
      if (physical_device(i) == physical) release_cached(cuda_device(i));
  }

  std::array<DevicePool, kMaxDevicesPerType> pools_;
};

// Leaked on purpose: tensors held by static objects may be freed after this file's statics
// would have been destroyed.
CachingAllocator& caching_allocator() {
  static CachingAllocator* allocator = new CachingAllocator();
  return *allocator;
}

// Registered at load time (the duet library is shared, so this always runs). No CUDA call
// happens here, so loading works without a driver; the first allocation talks to the GPU.
[[maybe_unused]] const bool caching_allocator_registered = [] {
  register_allocator(DeviceType::CUDA, &caching_allocator());
  return true;
}();

}  // namespace

int begin_private_pool(Device device) {
  check_device(device);
  return caching_allocator().pool(device).begin_private();
}

void end_private_pool(Device device) { caching_allocator().pool(device).end_private(); }

void release_private_pool(Device device, int pool) noexcept { caching_allocator().pool(device).release_private(pool); }

// Not while a graph records: cudaFree and cudaFreeHost wait for the device, which would
// invalidate the recording (a recorded device's cache, and the pinned one, are kept for later).
void empty_cache() {
  bool any_recording = false;
  for (int i = 0; i < device_count(); ++i) {
    if (caching_allocator().recording_on_gpu(physical_device(i))) any_recording = true;
    else caching_allocator().release_cached(cuda_device(i));
  }
  if (!any_recording) release_cached_pinned_memory();
}

bool recording_any_device() noexcept {
  try {
    for (int i = 0; i < device_count(); ++i)
      if (caching_allocator().recording_on_gpu(physical_device(i))) return true;
  } catch (...) {
  }
  return false;
}

}  // namespace duet::cuda
