// The CUDA runtime as the rest of duet sees it: plain C++, no CUDA headers, so it can be
// included everywhere. In a build without CUDA, device_count() is 0, is_built() is false and
// using a CUDA device throws "built without CUDA" (from the allocator and the kernels).
#pragma once

#include <cstddef>
#include <cstdint>

#include "duet/core/device.h"

namespace duet::cuda {

// Usable CUDA devices (after DUET_CUDA_VIRTUAL_DEVICES mapping). Returns 0 when there is no
// driver, no GPU, or no CUDA in this build. Never throws.
//
// DUET_CUDA_VIRTUAL_DEVICES=N (1..64) maps cuda:0..N-1 onto physical GPU 0, each logical
// device with its own stream and memory accounting. It exists to test the parallel
// strategies' mechanics on one GPU; results measured this way must say so.
int device_count() noexcept;
// True when this build has the CUDA backend compiled in.
bool is_built() noexcept;
// True when DUET_CUDA_VIRTUAL_DEVICES maps the logical devices onto one GPU (false without CUDA).
bool virtual_devices() noexcept;
// True when this process has a context on physical GPU `gpu` (its primary context is active).
// A context holds hundreds of MB of the GPU's memory, so duet creates one only on a GPU it uses.
bool has_context(int gpu) noexcept;

// Waits until everything queued on a CUDA device's stream has run; a no-op for a CPU device.
// Then throws the CPU's error for an out-of-range label that a cross-entropy on the device
// found meanwhile, as a copy of the device's results to the host does (bad_label.h).
void synchronize(Device device);

// Returns the caching allocator's unused blocks on every CUDA device to the driver (reserved
// bytes drop to those held by live tensors), and the cached pinned host blocks too, once the
// copies still reading them have finished. A no-op without CUDA: nothing is ever cached.
void empty_cache();

// TF32 tensor cores for f32 matmul (cuBLAS) and convolution (cuDNN). Off by default, so f32
// results on the GPU agree with the CPU to f32 rounding. Turning it on makes f32 GEMMs and
// convolutions several times faster but rounds their inputs to 10 mantissa bits: results then
// differ from the CPU (and from a TF32-off run) by about 1e-3 relative. f64 is never affected.
// Takes effect for the next launch, on every device and thread.
void set_allow_tf32(bool allow);
bool allow_tf32() noexcept;

// How many calls cuDNN declined since the process started, so that duet's own kernels ran
// instead (conv2d's im2col path, batch norm's kernels): slower, never wrong. Fallbacks asked
// for with DUET_CONV_IM2COL or DUET_BATCH_NORM_KERNELS are not counted. 0 without CUDA.
int64_t cudnn_declined() noexcept;

// Whether this build uses cuDNN (DUET_CUDNN, cmake/DuetCuda.cmake). Without it convolution runs
// through im2col + cuBLAS and batch norm on duet's own kernels. false without CUDA.
bool cudnn_is_built() noexcept;

}  // namespace duet::cuda
