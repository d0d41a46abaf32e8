// The CPU allocator: aligned host memory with a per-device cache of freed blocks.
//
// A training step allocates the same activation and gradient sizes every time. Without a
// cache each large block comes fresh from the system (mmap), and the kernels then pay a page
// fault for every 4 KiB they first touch. With it, a block freed by one step is handed to the
// next request of the same rounded size on the same logical device, already mapped.
//
// Logical CPU devices share the memory but not the cache, so each device's reserved bytes
// stay its own. Builds with AddressSanitizer skip the cache, so that a use after free still
// hits freed memory. DUET_CPU_CACHE=0 in the environment turns it off too.
#pragma once

#include <cstddef>
#include <cstdint>

#include "duet/core/allocator.h"

namespace duet {

// The cache keeps at most this many bytes of free blocks per device; a block freed beyond it
// goes back to the system.
inline constexpr int64_t kCpuCacheLimitBytes = int64_t{1} << 30;

Allocator& cpu_allocator();
// False under AddressSanitizer or with DUET_CPU_CACHE=0.
bool cpu_cache_enabled();
// Returns every cached free block of `device` (a CPU device) to the system.
void release_cached_cpu_memory(Device device);

}  // namespace duet
