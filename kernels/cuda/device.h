// CUDA-side internals of the runtime (kernels/cuda only): the logical-to-physical device
// mapping, the per-device streams and a device guard.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "duet/core/device.h"

namespace duet::cuda {

// Throws duet::Error unless `device` is cuda:i with i < device_count(), saying why not
// (no driver, no GPU, index out of range).
void check_device(Device device);

// Throws duet::Error "<what>: no CUDA device is available (<why>)" unless there is a GPU.
void require_gpu(const std::string& what);

// The physical GPU that logical device cuda:`index` runs on: 0 under
// DUET_CUDA_VIRTUAL_DEVICES, else `index` itself.
int physical_device(int index);

// The one stream of a logical device, created on first use. It is non-blocking, so work on it
// never serialises with the legacy default stream. Every launcher and copy runs on it.
cudaStream_t stream(Device device);

// Makes a logical device's physical GPU current for the enclosing scope and, on exit, restores
// the previously current GPU only where this process already has a context on it: cudaSetDevice
// creates one, so restoring device 0 (every thread's default) would put a context on GPU 0 in a
// process that only uses cuda:1 (an MPI rank, a --device cuda:1 run, a loader thread), as
// PyTorch avoids too. CUDA's current device is per host thread. The switch back is
// restore_device().
class DeviceGuard {
 public:
  explicit DeviceGuard(Device device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  bool restore_ = false;
};

// Makes physical GPU `gpu` current again, as ~DeviceGuard does, which cannot throw: a failure
// leaves the thread on its current GPU and is not left behind as the thread's last error, where
// the next unrelated check would report it (ignore_cuda_error, check.h).
void restore_device(int gpu) noexcept;

}  // namespace duet::cuda
