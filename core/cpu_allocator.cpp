#include "duet/core/cpu_allocator.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "duet/core/error.h"

namespace duet {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

bool cache_enabled() { return cpu_cache_enabled(); }

size_t rounded(size_t bytes) {
  return (std::max<size_t>(bytes, 1) + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
}

// One device's free blocks, by rounded size.
struct DeviceCache {
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<void*>> free;
  int64_t cached_bytes = 0;
};

class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t bytes, Device device) override {
    const size_t size = rounded(bytes);
    if (void* block = take_cached(size, device)) {
      record_memory(device, static_cast<int64_t>(bytes), 0);
      return block;
    }
    void* ptr = std::aligned_alloc(kCpuAlignment, size);
    if (!ptr) {
      release_cached_cpu_memory(device);  // the cache may hold what the system now lacks
      ptr = std::aligned_alloc(kCpuAlignment, size);
    }
    if (!ptr) {
      MemoryStats s = memory_stats(device);
      DUET_FAIL("out of memory on ", device, ": failed to allocate ", bytes, " bytes (", s.current, " bytes in use)");
    }
    record_memory(device, static_cast<int64_t>(bytes), static_cast<int64_t>(size));
    return ptr;
  }

  void deallocate(void* ptr, size_t bytes, Device device) override {
    const size_t size = rounded(bytes);
    if (cache_enabled()) {
      DeviceCache& cache = cache_of(device);
      std::lock_guard lock(cache.mutex);
      if (cache.cached_bytes + static_cast<int64_t>(size) <= kCpuCacheLimitBytes) {
        cache.free[size].push_back(ptr);
        cache.cached_bytes += static_cast<int64_t>(size);
        record_memory(device, -static_cast<int64_t>(bytes), 0);
        return;
      }
    }
    std::free(ptr);
    record_memory(device, -static_cast<int64_t>(bytes), -static_cast<int64_t>(size));
  }

  void release(Device device) {
    DeviceCache& cache = cache_of(device);
    std::lock_guard lock(cache.mutex);
    for (auto& [size, blocks] : cache.free) {
      for (void* block : blocks) std::free(block);
      record_memory(device, 0, -static_cast<int64_t>(size * blocks.size()));
    }
    cache.free.clear();
    cache.cached_bytes = 0;
  }

 private:
  void* take_cached(size_t size, Device device) {
    if (!cache_enabled()) return nullptr;
    DeviceCache& cache = cache_of(device);
    std::lock_guard lock(cache.mutex);
    auto it = cache.free.find(size);
    if (it == cache.free.end() || it->second.empty()) return nullptr;
    void* block = it->second.back();
    it->second.pop_back();
    cache.cached_bytes -= static_cast<int64_t>(size);
    return block;
  }

  DeviceCache& cache_of(Device device) {
    DUET_CHECK(device.is_cpu() && device.index >= 0 && device.index < kMaxDevicesPerType,
               "the CPU allocator cannot serve ", device);
    return caches_[static_cast<size_t>(device.index)];
  }

  std::array<DeviceCache, kMaxDevicesPerType> caches_;
};

CpuAllocator& the_allocator() {
  // Never destroyed: tensors in static storage may free their memory after main returns.
  static CpuAllocator* allocator = new CpuAllocator;
  return *allocator;
}

}  // namespace

Allocator& cpu_allocator() { return the_allocator(); }

bool cpu_cache_enabled() {
  static const bool enabled = [] {
    const char* env = std::getenv("DUET_CPU_CACHE");
    return !kSanitized && !(env && std::strcmp(env, "0") == 0);
  }();
  return enabled;
}

void release_cached_cpu_memory(Device device) { the_allocator().release(device); }

}  // namespace duet
