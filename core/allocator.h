// Allocators and per-device memory accounting.
//
// core owns the CPU allocator. Other device types register theirs (kernels/cuda does, at
// load time), so core never includes a CUDA header.
#pragma once

#include <cstddef>
#include <cstdint>

#include "duet/core/device.h"

namespace duet {

struct MemoryStats {
  int64_t current = 0;      // bytes held by live tensors
  int64_t peak = 0;         // high-water mark of current since the last reset
  int64_t reserved = 0;     // bytes the allocator holds from the system, cached blocks included
  int64_t allocations = 0;  // number of allocate() calls
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(size_t bytes, Device device) = 0;
  virtual void deallocate(void* ptr, size_t bytes, Device device) = 0;
  // True for page-locked host memory, which a GPU reads asynchronously (pinned_allocator()).
  virtual bool is_pinned() const { return false; }
  // Returns once no asynchronous copy still reads the block at `ptr`, so the host may write it.
  // Only pinned memory is ever read asynchronously.
  virtual void wait_for_pending_reads(void* ptr) {}
};

// The allocator for `device`. Throws if that device type has none (e.g. CUDA in a CPU-only build).
Allocator& allocator_for(Device device);
// Installs the allocator for a device type. The pointer must outlive every tensor.
void register_allocator(DeviceType type, Allocator* allocator);

// Page-locked (pinned) host memory for CPU devices, from the CUDA runtime: copies from it to a
// GPU run asynchronously. kernels/cuda registers it; in a build without CUDA this throws
// "built without CUDA", and with CUDA but no GPU its allocate() throws.
Allocator& pinned_allocator();
void register_pinned_allocator(Allocator* allocator);

MemoryStats memory_stats(Device device);
void reset_peak_memory(Device device);

// Called by allocators: record `bytes` gained (positive) or returned (negative) by tensors,
// and by the allocator from the system (`reserved_delta`).
void record_memory(Device device, int64_t bytes, int64_t reserved_delta);

// CPU allocations are aligned to this many bytes (a cache line, and AVX-512 friendly).
inline constexpr size_t kCpuAlignment = 64;

}  // namespace duet
