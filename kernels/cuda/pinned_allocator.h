// The pinned (page-locked) host allocator's hooks for the CUDA copies; kernels/cuda only. The
// allocator itself is registered with core (pinned_allocator()) at load time.
#pragma once

#include "duet/core/device.h"

namespace duet::cuda {

// Marks the pinned block that starts at `block` as read by the work queued so far on `gpu`'s
// stream (an asynchronous host-to-device copy). Until that work has finished the block is not
// handed out again nor returned to the driver, and Tensor's in-place writes to it wait.
void record_pinned_read(void* block, Device gpu);

// Returns the cached (unused) pinned blocks to the driver, each once the copies that still
// read it have finished. Part of cuda::empty_cache().
void release_cached_pinned_memory();

}  // namespace duet::cuda
