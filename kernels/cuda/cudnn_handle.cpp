// The per-device cuDNN handles of cudnn_handle.h.
#include "duet/kernels/cuda/cudnn_handle.h"

#include <array>
#include <atomic>

#include "duet/kernels/cuda/check.h"
#include "duet/kernels/cuda/device.h"
#include "duet/kernels/cuda/nn_launchers.h"
#include "duet/kernels/cuda/runtime.h"

namespace duet::cuda {
namespace {

// Shaped as blas.cpp's handle table (created once per device, locked per call); each holds its own
// library's handle type and setup calls, so the two stay apart.
struct Handles {
  std::array<std::once_flag, kMaxDevicesPerType> created;
  std::array<cudnnHandle_t, kMaxDevicesPerType> handle{};
  std::array<std::mutex, kMaxDevicesPerType> in_use;
};

std::atomic<int64_t> declined{0};

// Never destroyed: destroying handles at exit would race the driver's teardown (as the streams).
Handles& handles() {
  static Handles* h = new Handles();
  return *h;
}

cudnnHandle_t handle_for(Device device) {
  Handles& h = handles();
  const auto i = static_cast<size_t>(device.index);
  std::call_once(h.created[i], [&] {
    DeviceGuard guard(device);
    DUET_CUDNN_CHECK(cudnnCreate(&h.handle[i]));
    DUET_CUDNN_CHECK(cudnnSetStream(h.handle[i], stream(device)));
  });
  return h.handle[i];
}

}  // namespace

// Created (once) before the lock is taken, as conv2d did before the handle was shared.
CudnnHandle::CudnnHandle(Device device)
    : handle_(handle_for(device)), lock_(handles().in_use[static_cast<size_t>(device.index)]) {}

bool ran_in_cudnn(bool ran) {
  if (!ran) ++declined;
  return ran;
}

int64_t cudnn_declined() noexcept { return declined.load(); }

bool cudnn_is_built() noexcept { return true; }

}  // namespace duet::cuda
