// The per-device cuBLAS handles and the typed GEMM entry point of blas.h.
#include "duet/kernels/cuda/blas.h"

#include <array>
#include <limits>
#include <mutex>
#include <type_traits>

#include "duet/kernels/cuda/check.h"
#include "duet/kernels/cuda/device.h"
#include "duet/kernels/cuda/runtime.h"

namespace duet::cuda {
namespace {

struct Handles {
  std::array<std::once_flag, kMaxDevicesPerType> created;
  std::array<cublasHandle_t, kMaxDevicesPerType> handle{};
  // A handle's math mode is set per call, so two threads on one device take turns.
  std::array<std::mutex, kMaxDevicesPerType> in_use;
};

// Never destroyed: destroying handles at exit would race the driver's teardown (as the streams).
Handles& handles() {
  static Handles* h = new Handles();
  return *h;
}

cublasHandle_t handle_for(Device device) {
  check_device(device);
  Handles& h = handles();
  const auto i = static_cast<size_t>(device.index);
  std::call_once(h.created[i], [&] {
    DeviceGuard guard(device);
    DUET_CUBLAS_CHECK(cublasCreate(&h.handle[i]));
    DUET_CUBLAS_CHECK(cublasSetStream(h.handle[i], stream(device)));
  });
  return h.handle[i];
}

int as_int(int64_t v, const char* what) {
  DUET_CHECK(v >= 0 && v <= std::numeric_limits<int>::max(), "matmul on CUDA: ", what, " = ", v,
             " does not fit cuBLAS's int");
  return static_cast<int>(v);
}

cublasOperation_t op_of(bool transposed) { return transposed ? CUBLAS_OP_T : CUBLAS_OP_N; }

}  // namespace

template <class T> void gemm_strided_batched(Device device, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                                             T alpha, const T* a, int64_t lda, int64_t stride_a, const T* b,
                                             int64_t ldb, int64_t stride_b, T beta, T* c, int64_t ldc, int64_t stride_c,
                                             int64_t batch) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  cublasHandle_t handle = handle_for(device);
  std::lock_guard<std::mutex> lock(handles().in_use[static_cast<size_t>(device.index)]);
  const bool tf32 = std::is_same_v<T, float> && allow_tf32();
  DUET_CUBLAS_CHECK(cublasSetMathMode(handle, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  const int im = as_int(m, "m"), in = as_int(n, "n"), ik = as_int(k, "k"), ibatch = as_int(batch, "batch");
  const int ilda = as_int(lda, "lda"), ildb = as_int(ldb, "ldb"), ildc = as_int(ldc, "ldc");
  if constexpr (std::is_same_v<T, float>) {
    DUET_CUBLAS_CHECK(cublasSgemmStridedBatched(handle, op_of(trans_a), op_of(trans_b), im, in, ik, &alpha, a, ilda,
                                                stride_a, b, ildb, stride_b, &beta, c, ildc, stride_c, ibatch));
  } else {
    DUET_CUBLAS_CHECK(cublasDgemmStridedBatched(handle, op_of(trans_a), op_of(trans_b), im, in, ik, &alpha, a, ilda,
                                                stride_a, b, ildb, stride_b, &beta, c, ildc, stride_c, ibatch));
  }
}

template void gemm_strided_batched<float>(Device, bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                                          int64_t, const float*, int64_t, int64_t, float, float*, int64_t, int64_t,
                                          int64_t);
template void gemm_strided_batched<double>(Device, bool, bool, int64_t, int64_t, int64_t, double, const double*,
                                           int64_t, int64_t, const double*, int64_t, int64_t, double, double*, int64_t,
                                           int64_t, int64_t);

}  // namespace duet::cuda
