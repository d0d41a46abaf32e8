// Checking macros for CUDA runtime, cuBLAS and (in builds with NCCL) NCCL calls; cuDNN's is in
// cudnn_handle.h, since cuDNN is optional. Every call into one of these libraries goes through its
// macro, so a failure surfaces as a duet::Error that names the file, the line, the call and the
// library's own message.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#ifdef DUET_HAS_NCCL
#include <nccl.h>
#endif

#include "duet/core/error.h"

namespace duet::cuda::detail {

[[noreturn]] inline void throw_cuda_error(cudaError_t status, const char* expr, const char* file, int line) {
  // Clears the (non-sticky) error so that the next unrelated check does not report it again.
  cudaGetLastError();
  DUET_FAIL("CUDA error at ", file, ":", line, ": ", expr, " failed: ", cudaGetErrorName(status), " (",
            cudaGetErrorString(status), ")");
}

}  // namespace duet::cuda::detail

namespace duet::cuda {

// For a CUDA call whose failure the caller deliberately ignores (a destructor's cleanup, a probe
// whose "no" is an answer): clears the failure from the thread's last error, where the next
// unrelated DUET_CUDA_CHECK_LAUNCH would report it as its own. Returns `status` for the caller
// that looks at it. A sticky error (a kernel's illegal address) cannot be cleared and is reported
// by every later call anyway.
inline cudaError_t ignore_cuda_error(cudaError_t status) noexcept {
  if (status != cudaSuccess) cudaGetLastError();
  return status;
}

}  // namespace duet::cuda

namespace duet::cuda::detail {

[[noreturn]] inline void throw_cublas_error(cublasStatus_t status, const char* expr, const char* file, int line) {
  DUET_FAIL("cuBLAS error at ", file, ":", line, ": ", expr, " failed: ", cublasGetStatusName(status), " (",
            cublasGetStatusString(status), ")");
}

#ifdef DUET_HAS_NCCL
[[noreturn]] inline void throw_nccl_error(ncclResult_t status, const char* expr, const char* file, int line) {
  // ncclGetLastError adds NCCL's own account of the failure (which peer, which resource) when it has one.
  const char* detail = ncclGetLastError(nullptr);
  DUET_FAIL("NCCL error at ", file, ":", line, ": ", expr, " failed: ", ncclGetErrorString(status),
            detail && *detail ? std::string(" (") + detail + ")" : std::string());
}
#endif

}  // namespace duet::cuda::detail

// One macro per library, not one generic macro: forwarding `expr` would expand it before #expr, so
// errors would quote cublasCreate_v2(...) where the code says cublasCreate(...).
#define DUET_CUDA_CHECK(expr)                                                               \
  do {                                                                                      \
    cudaError_t duet_cuda_status_ = (expr);                                                 \
    if (duet_cuda_status_ != cudaSuccess)                                                   \
      ::duet::cuda::detail::throw_cuda_error(duet_cuda_status_, #expr, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: reports bad launch configurations (the launch itself returns nothing).
#define DUET_CUDA_CHECK_LAUNCH() DUET_CUDA_CHECK(cudaGetLastError())

#define DUET_CUBLAS_CHECK(expr)                                                                 \
  do {                                                                                          \
    cublasStatus_t duet_cublas_status_ = (expr);                                                \
    if (duet_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                           \
      ::duet::cuda::detail::throw_cublas_error(duet_cublas_status_, #expr, __FILE__, __LINE__); \
  } while (0)

#ifdef DUET_HAS_NCCL
#define DUET_NCCL_CHECK(expr)                                                               \
  do {                                                                                      \
    ncclResult_t duet_nccl_status_ = (expr);                                                \
    if (duet_nccl_status_ != ncclSuccess)                                                   \
      ::duet::cuda::detail::throw_nccl_error(duet_nccl_status_, #expr, __FILE__, __LINE__); \
  } while (0)
#endif
