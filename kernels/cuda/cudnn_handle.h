// cuDNN as duet uses it: one handle per logical device, created on first use and bound to that
// device's stream, so cuDNN's kernels are ordered with every other kernel of the device. Shared
// by conv2d_cudnn.cpp and batch_norm_cudnn.cpp, which are built only with cuDNN (DUET_CUDNN), as
// is this header.
#pragma once

#include <cudnn.h>

#include <mutex>

#include "duet/core/device.h"
#include "duet/core/dtype.h"
#include "duet/core/error.h"

namespace duet::cuda {
namespace detail {

[[noreturn]] inline void throw_cudnn_error(cudnnStatus_t status, const char* expr, const char* file, int line) {
  DUET_FAIL("cuDNN error at ", file, ":", line, ": ", expr, " failed: ", cudnnGetErrorString(status));
}

}  // namespace detail

// `device`'s handle, held for the lifetime of this object: a cuDNN handle carries state (its
// stream, its workspace) and must not be used by two threads at once.
class CudnnHandle {
 public:
  explicit CudnnHandle(Device device);
  cudnnHandle_t get() const { return handle_; }

 private:
  cudnnHandle_t handle_;
  std::lock_guard<std::mutex> lock_;
};

// cuDNN 9 refines NOT_SUPPORTED into sub-codes (_SHAPE, _DATA_TYPE, ... = 3001..): all of them
// mean "this case is not for cuDNN", which a caller answers with its own kernels, not an error.
inline bool cudnn_not_supported(cudnnStatus_t status) {
#ifdef CUDNN_STATUS_CATEGORY
  return CUDNN_STATUS_CATEGORY(status) == CUDNN_STATUS_NOT_SUPPORTED;
#else
  return status == CUDNN_STATUS_NOT_SUPPORTED;
#endif
}

// cuDNN's name for a dtype duet runs through it (f32 or f64).
inline cudnnDataType_t cudnn_type(DType dtype) { return dtype == DType::f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT; }

}  // namespace duet::cuda

// As check.h's macros: a failed call throws duet::Error naming the file, the line and the call.
#define DUET_CUDNN_CHECK(expr)                                                                \
  do {                                                                                        \
    cudnnStatus_t duet_cudnn_status_ = (expr);                                                \
    if (duet_cudnn_status_ != CUDNN_STATUS_SUCCESS)                                           \
      ::duet::cuda::detail::throw_cudnn_error(duet_cudnn_status_, #expr, __FILE__, __LINE__); \
  } while (0)
