// Checking macros for CUDA runtime calls (cuBLAS/cuDNN variants join them with those backends).
// Every call into the CUDA runtime goes through DUET_CUDA_CHECK, so a failure surfaces as a
// duet::Error that names the file, the line, the call and CUDA's own message.
#pragma once

#include <cuda_runtime_api.h>

#include "duet/core/error.h"

namespace duet::cuda::detail {

[[noreturn]] inline void throw_cuda_error(cudaError_t status, const char* expr, const char* file,
                                          int line) {
  // Clears the (non-sticky) error so that the next unrelated check does not report it again.
  cudaGetLastError();
  DUET_FAIL("CUDA error at ", file, ":", line, ": ", expr, " failed: ", cudaGetErrorName(status),
            " (", cudaGetErrorString(status), ")");
}

}  // namespace duet::cuda::detail

#define DUET_CUDA_CHECK(expr)                                                     \
  do {                                                                            \
    cudaError_t duet_cuda_status_ = (expr);                                       \
    if (duet_cuda_status_ != cudaSuccess)                                         \
      ::duet::cuda::detail::throw_cuda_error(duet_cuda_status_, #expr, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: reports bad launch configurations (the launch itself returns nothing).
#define DUET_CUDA_CHECK_LAUNCH() DUET_CUDA_CHECK(cudaGetLastError())
