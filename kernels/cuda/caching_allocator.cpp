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
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "duet/core/allocator.h"
#include "duet/core/error.h"
#include "duet/kernels/cuda/check.h"
#include "duet/kernels/cuda/device.h"
#include "duet/kernels/cuda/pinned_allocator.h"
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

struct Block {
  size_t size;          // bytes obtained from cudaMalloc (the bin size)
  cudaStream_t stream;  // the stream it was allocated for; reused only there
};

using BinKey = std::pair<cudaStream_t, size_t>;

// The blocks of one logical device. Virtual devices share a GPU but keep separate pools,
// so their accounting stays separate.
struct DevicePool {
  std::mutex mutex;
  std::map<BinKey, std::vector<void*>> cached;  // free blocks by (stream, size)
  std::unordered_map<void*, Block> live;        // blocks owned by tensors

  void* take_cached(const BinKey& key) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cached.find(key);
    if (it == cached.end() || it->second.empty()) return nullptr;
    void* ptr = it->second.back();
    it->second.pop_back();
    live.emplace(ptr, Block{key.second, key.first});
    return ptr;
  }

  void add_live(void* ptr, const Block& block) {
    std::lock_guard<std::mutex> lock(mutex);
    live.emplace(ptr, block);
  }

  // Moves a live block to the cache; false if `ptr` was not allocated here.
  bool give_back(void* ptr) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = live.find(ptr);
    if (it == live.end()) return false;
    cached[{it->second.stream, it->second.size}].push_back(ptr);
    live.erase(it);
    return true;
  }

  // Removes every cached block and returns them with their sizes, for cudaFree.
  std::vector<std::pair<void*, size_t>> take_all_cached() {
    std::lock_guard<std::mutex> lock(mutex);
    std::vector<std::pair<void*, size_t>> out;
    for (auto& [key, ptrs] : cached)
      for (void* p : ptrs) out.emplace_back(p, key.second);
    cached.clear();
    return out;
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
    if (void* ptr = p.take_cached({s, size})) {
      record_memory(device, static_cast<int64_t>(bytes), 0);
      return ptr;
    }
    void* ptr = malloc_from_driver(bytes, size, device);
    p.add_live(ptr, Block{size, s});
    record_memory(device, static_cast<int64_t>(bytes), static_cast<int64_t>(size));
    return ptr;
  }

  void deallocate(void* ptr, size_t bytes, Device device) override {
    if (!ptr) return;
    if (!pool(device).give_back(ptr)) {
      // Called from Storage's destructor, which cannot throw; a foreign pointer means memory
      // corruption, so stop here rather than carry on.
      std::fprintf(stderr, "duet: CUDA caching allocator asked to free %p on %s, which it never allocated\n",
                   ptr, device.str().c_str());
      std::abort();
    }
    record_memory(device, -static_cast<int64_t>(bytes), 0);
  }

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
  DevicePool& pool(Device device) { return pools_[static_cast<size_t>(device.index)]; }

  // cudaMalloc, retried once after freeing the caches of every logical device on the same GPU.
  void* malloc_from_driver(size_t bytes, size_t size, Device device) {
    DeviceGuard guard(device);
    void* ptr = nullptr;
    cudaError_t status = cudaMalloc(&ptr, size);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // clear it before retrying
      release_cached_on_gpu(physical_device(device.index));
      status = cudaMalloc(&ptr, size);
    }
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      MemoryStats stats = memory_stats(device);
      size_t free_bytes = 0, total_bytes = 0;
      cudaMemGetInfo(&free_bytes, &total_bytes);
      DUET_FAIL("CUDA out of memory on ", device, ": failed to allocate ", bytes, " bytes (",
                size, " with rounding); ", device, " has ", stats.current, " bytes in use by tensors and ",
                stats.reserved, " reserved by the caching allocator; the GPU has ", free_bytes,
                " of ", total_bytes, " bytes free");
    }
    DUET_CUDA_CHECK(status);
    return ptr;
  }

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
[[maybe_unused]] const bool registered = [] {
  register_allocator(DeviceType::CUDA, &caching_allocator());
  return true;
}();

}  // namespace

void empty_cache() {
  for (int i = 0; i < device_count(); ++i) caching_allocator().release_cached(cuda_device(i));
  release_cached_pinned_memory();
}

}  // namespace duet::cuda
