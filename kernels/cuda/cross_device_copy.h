// Copies between devices that involve CUDA: host <-> device and between two CUDA devices
// (two logical devices may share one GPU). Registered with kernels::register_cross_device_copy
// for CPU <-> CUDA; the CUDA backend's copy() calls it for cuda:i -> cuda:j.
#pragma once

#include "duet/core/tensor.h"

namespace duet::cuda {

// dst = src with dst's dtype, src broadcast to dst.sizes(); either may be strided. The transfer
// is waited for, so host memory on either side may be reused on return, with one exception: a
// dense src in pinned host memory, already of dst's dtype and shape, is copied asynchronously
// on dst's stream (kernels queued there later see the data; the pinned allocator keeps src's
// block from reuse, and Tensor's in-place writes to src wait, until the copy is done). A final
// strided scatter into a CUDA dst is ordered on dst's stream like any other kernel.
void copy_across_devices(const Tensor& src, const Tensor& dst);

}  // namespace duet::cuda
