// What every entry of the CUDA kernel table does first: checks that each operand is on the
// output's device, makes that device current and picks its stream (cuda_backend.cpp).
#pragma once

#include <initializer_list>

#include "duet/core/error.h"
#include "duet/core/tensor.h"
#include "duet/kernels/cuda/device.h"

namespace duet::cuda {

// The device every kernel argument must be on; undefined (optional) tensors are skipped.
// Catching a mix here beats an illegal-address fault, which would poison the whole context.
inline Device common_device(const char* op, const Tensor& out, std::initializer_list<const Tensor*> inputs) {
  for (const Tensor* t : inputs)
    DUET_CHECK(!t->defined() || t->device() == out.device(), op, " on CUDA: ", t->describe(), " and ", out.describe(),
               " are on different devices");
  return out.device();
}

// The output's device made current, and its stream, for one launch.
class OnDevice {
 public:
  OnDevice(const char* op, const Tensor& out, std::initializer_list<const Tensor*> inputs)
      : device_(common_device(op, out, inputs)), guard_(device_), stream_(cuda::stream(device_)) {}
  Device device() const { return device_; }
  cudaStream_t stream() const { return stream_; }

 private:
  Device device_;
  DeviceGuard guard_;
  cudaStream_t stream_;
};

}  // namespace duet::cuda
