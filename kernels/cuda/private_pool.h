// The caching allocator's private pools, for CUDA graphs (graph.cpp). While a private pool is
// active on a logical device, every allocation there comes from it, and the blocks it handed
// out return to it when freed, whichever pool is active then. Blocks in a private pool are
// never given to other allocations nor freed by empty_cache(): a graph replay may still write
// them.
#pragma once

#include "duet/core/device.h"

namespace duet::cuda {

// Creates a private pool and makes it the device's active pool; returns its id (> 0). One at
// a time per device: throws if another is active.
int begin_private_pool(Device device);
// Makes the shared pool active again; the private pool keeps its blocks.
void end_private_pool(Device device);
// Retires the pool: its cached blocks join the shared cache (reused on the same stream, so
// after any replay already queued there), and its live blocks will when they are freed.
void release_private_pool(Device device, int pool) noexcept;

// True while a private pool is active on some device, i.e. a graph records it: no memory may be
// freed then (cudaFree and cudaFreeHost wait for the device, which invalidates the recording).
bool recording_any_device() noexcept;

}  // namespace duet::cuda
