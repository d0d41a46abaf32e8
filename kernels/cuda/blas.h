// cuBLAS as duet uses it: one handle per logical device, created on first use and bound to that
// device's stream (device.h), so GEMMs are ordered with every other kernel of the device.
#pragma once

#include <cstdint>

#include "duet/core/device.h"

namespace duet::cuda {

// Column-major, strided-batched GEMM on `device`'s stream:
//   C_i = alpha * op(A_i) * op(B_i) + beta * C_i,  i < batch,  X_i = X + i * stride_x,
// op(X) = X^T when trans_x. m, n, k, batch >= 1 and every ld must satisfy cuBLAS's rules. The
// caller has made `device` current. f32 runs with TF32 only under set_allow_tf32(true).
template <class T> void gemm_strided_batched(Device device, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                                             T alpha, const T* a, int64_t lda, int64_t stride_a, const T* b,
                                             int64_t ldb, int64_t stride_b, T beta, T* c, int64_t ldc, int64_t stride_c,
                                             int64_t batch);

}  // namespace duet::cuda
