#include "duet/kernels/cpu/gemm.h"

#include <cblas.h>

#include <limits>
#include <type_traits>

#include "duet/core/error.h"

namespace duet::kernels::cpu {
namespace {

void keep_blas_single_threaded() {
  static const bool done = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)done;
}

blasint blas_int(int64_t v) {
  DUET_CHECK(v >= 0 && v <= std::numeric_limits<blasint>::max(), "gemm: dimension ", v, " too large for BLAS");
  return static_cast<blasint>(v);
}

}  // namespace

template <class T> void gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                             int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  keep_blas_single_threaded();
  const CBLAS_TRANSPOSE ta = transpose_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = transpose_b ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, ta, tb, blas_int(m), blas_int(n), blas_int(k), alpha, a, blas_int(lda), b, blas_int(ldb),
                beta, c, blas_int(ldc));
  } else {
    cblas_dgemm(CblasRowMajor, ta, tb, blas_int(m), blas_int(n), blas_int(k), alpha, a, blas_int(lda), b, blas_int(ldb),
                beta, c, blas_int(ldc));
  }
}

template void gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                          float, float*, int64_t);
template void gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t, const double*,
                           int64_t, double, double*, int64_t);

}  // namespace duet::kernels::cpu
