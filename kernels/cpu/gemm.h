// Row-major GEMM on raw buffers for the CPU kernels that call BLAS per image (conv2d):
//   c = alpha * op(a) @ op(b) + beta * c,  op(a) [m, k], op(b) [k, n], c [m, n].
// OpenBLAS runs single-threaded: the callers split their work over the thread pool, so BLAS's
// own threads would only oversubscribe the cores.
#pragma once

#include <cstdint>

namespace duet::kernels::cpu {

template <class T>  // float or double
void gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
          const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

}  // namespace duet::kernels::cpu
