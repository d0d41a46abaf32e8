// Pinned host memory: page-locked with cudaHostAlloc, so the GPU's copy engine reads it directly
// and a host-to-device copy from it can run while the host goes on (cross_device_copy.cpp).
//
// Page-locking is slow (it maps and locks every page), so freed blocks are cached per logical
// CPU device in power-of-two bins and handed out again, as PyTorch's host allocator does. The
// danger of asynchrony is reuse: a block freed right after its copy was queued must not be
// rewritten before the GPU has read it. Each asynchronous read records a CUDA event on the
// reading stream; a cached block is reused only once all of its events have completed, and
// empty_cache() waits for them before freeing.
#include <array>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "duet/core/allocator.h"
#include "duet/core/error.h"
#include "duet/kernels/cuda/check.h"
#include "duet/kernels/cuda/device.h"
#include "duet/kernels/cuda/pinned_allocator.h"
#include "duet/kernels/cuda/pinned_cache.h"
#include "duet/kernels/cuda/private_pool.h"
#include "duet/kernels/cuda/runtime.h"

namespace duet::cuda {
namespace {

constexpr size_t kMinBin = 512;

size_t bin_size(size_t bytes) {
  size_t bin = kMinBin;
  while (bin < bytes) bin *= 2;
  return bin;
}

// Drops the events whose work has completed; true when none is left. Each event leaves the list
// as it is destroyed, so a throw leaves no destroyed event behind to be destroyed again.
bool reads_finished(std::vector<cudaEvent_t>& reads) {
  for (auto it = reads.begin(); it != reads.end();) {
    const cudaError_t status = cudaEventQuery(*it);
    if (status == cudaErrorNotReady) {
      ignore_cuda_error(status);  // "not ready" is an answer, not an error to report later
      ++it;
      continue;
    }
    DUET_CUDA_CHECK(status);
    DUET_CUDA_CHECK(cudaEventDestroy(*it));
    it = reads.erase(it);
  }
  return reads.empty();
}

// Waits for every event, as reads_finished drops them.
void wait_and_destroy(std::vector<cudaEvent_t>& reads) {
  while (!reads.empty()) {
    DUET_CUDA_CHECK(cudaEventSynchronize(reads.back()));
    DUET_CUDA_CHECK(cudaEventDestroy(reads.back()));
    reads.pop_back();
  }
}

// The current GPU when this process has a context on it, else the first device on a GPU that has
// one; nothing when no GPU has a context yet (cudaHostAlloc then creates the current one's).
std::optional<Device> device_with_context() {
  int current = 0;
  DUET_CUDA_CHECK(cudaGetDevice(&current));
  if (has_context(current)) return std::nullopt;
  for (int i = 0; i < device_count(); ++i)
    if (has_context(physical_device(i))) return cuda_device(i);
  return std::nullopt;
}

struct Block {
  size_t size = 0;                 // bytes page-locked (the bin size)
  std::vector<cudaEvent_t> reads;  // asynchronous copies that may still read it
};

class PinnedAllocator final : public Allocator {
 public:
  bool is_pinned() const override { return true; }

  void* allocate(size_t bytes, Device device) override {
    DUET_CHECK(device.is_cpu(), "pinned memory is host memory: cannot allocate it for ", device);
    require_gpu("cannot allocate pinned (page-locked) host memory");
    if (bytes == 0) return nullptr;  // nothing to point at; deallocate(nullptr) is a no-op
    const size_t size = bin_size(bytes);
    if (void* ptr = take_cached(device, size)) {
      record_memory(device, static_cast<int64_t>(bytes), 0);
      return ptr;
    }
    void* ptr = page_locked(size);
    {
      std::lock_guard lock(mutex_);
      live_.emplace(ptr, Block{size, {}});
    }
    record_memory(device, static_cast<int64_t>(bytes), static_cast<int64_t>(size));
    return ptr;
  }

  void deallocate(void* ptr, size_t bytes, Device device) override {
    if (!ptr) return;
    {
      std::lock_guard lock(mutex_);
      auto it = live_.find(ptr);
      if (it == live_.end()) {
        // From Storage's destructor, which cannot throw: a foreign pointer means corruption.
        std::fprintf(stderr, "duet: pinned allocator asked to free %p, which it never allocated\n", ptr);
        std::abort();
      }
      cache_.put(key(device, it->second.size), ptr, std::move(it->second));
      live_.erase(it);
    }
    record_memory(device, -static_cast<int64_t>(bytes), 0);
  }

  void wait_for_pending_reads(void* ptr) override {
    // Under the lock: a concurrent record or prune must not touch the events being waited on.
    std::lock_guard lock(mutex_);
    auto it = live_.find(ptr);
    if (it != live_.end()) wait_and_destroy(it->second.reads);
  }

  void record_read(void* ptr, Device gpu) {
    std::lock_guard lock(mutex_);
    auto it = live_.find(ptr);
    DUET_CHECK(it != live_.end(), "record_pinned_read: ", ptr, " is not a live pinned block");
    reads_finished(it->second.reads);  // a tensor copied every step must not pile up events
    DeviceGuard guard(gpu);
    cudaEvent_t event = nullptr;
    DUET_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    it->second.reads.push_back(event);  // before recording: destroyed with the block if that throws
    DUET_CUDA_CHECK(cudaEventRecord(event, stream(gpu)));
  }

  // Frees the cached blocks, each once the copies reading it have finished. Should one free
  // throw, the blocks not yet freed stay cached (PinnedCache::release), so none is lost, and the
  // reserved bytes count exactly the blocks freed.
  void release_cached() {
    cache_.release([](const Cache::Key& k, void* ptr, Block& block) {
      wait_and_destroy(block.reads);
      DUET_CUDA_CHECK(cudaFreeHost(ptr));
      record_memory(cpu(k.first), 0, -static_cast<int64_t>(block.size));
    });
  }

 private:
  using Cache = PinnedCache<Block>;
  static Cache::Key key(Device device, size_t size) { return {device.index, size}; }

  // A cached block of this bin that no copy reads any more, moved back to the live set; or null.
  void* take_cached(Device device, size_t size) {
    std::optional<Cache::Entry> entry =
        cache_.take(key(device, size), [](Block& block) { return reads_finished(block.reads); });
    if (!entry) return nullptr;
    std::lock_guard lock(mutex_);
    live_.emplace(entry->first, std::move(entry->second));
    return entry->first;
  }

  // cudaHostAlloc, retried once after returning the cache to the driver (not while a graph
  // records: freeing would invalidate the recording). Portable: every GPU's context sees the
  // block as pinned, not only the current one's. Made in the context of a GPU this process
  // already uses: cudaHostAlloc on a thread that never chose one (a loader's worker) would create
  // a context on GPU 0.
  void* page_locked(size_t size) {
    void* ptr = nullptr;
    std::optional<DeviceGuard> guard;
    if (std::optional<Device> used = device_with_context()) guard.emplace(*used);
    auto allocate = [&] {
      cudaError_t status = cudaHostAlloc(&ptr, size, cudaHostAllocPortable);
      if (status == cudaErrorMemoryAllocation) {
        ignore_cuda_error(status);
        return false;
      }
      DUET_CUDA_CHECK(status);
      return true;
    };
    if (!allocate_or_release_and_retry(
            allocate, [this] { release_cached(); }, recording_any_device))
      DUET_FAIL("out of pinned host memory: cudaHostAlloc could not page-lock ", size, " bytes");
    return ptr;
  }

  std::mutex mutex_;                       // guards live_
  std::unordered_map<void*, Block> live_;  // blocks owned by storages
  Cache cache_;                            // freed blocks, maybe still read
};

// Leaked on purpose, like the device allocator: tensors in static storage may be freed late.
PinnedAllocator& the_allocator() {
  static PinnedAllocator* allocator = new PinnedAllocator();
  return *allocator;
}

// Registered at load time; no CUDA call happens until the first pinned allocation.
[[maybe_unused]] const bool pinned_allocator_registered = [] {
  register_pinned_allocator(&the_allocator());
  return true;
}();

}  // namespace

void record_pinned_read(void* block, Device gpu) { the_allocator().record_read(block, gpu); }

void release_cached_pinned_memory() { the_allocator().release_cached(); }

}  // namespace duet::cuda
