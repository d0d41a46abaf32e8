#include "duet/kernels/cpu/gemm.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "duet/core/error.h"
#include "duet/kernels/cpu/simd.h"

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

// ---- PackedPanels: duet's own GEMM ----
//
// The register block of duet's convolutions (conv2d_direct.cpp): 6 rows of c x 4 vectors of
// columns in 24 accumulators; per step of k, four loads of the panel [k][4 vectors] and six
// broadcasts of op(a).
namespace {

constexpr int64_t kRowBlock = 6;

}  // namespace

template <class T> bool PackedPanels<T>::pays(int64_t m, int64_t n, int64_t k) {
  return k <= 2048 && k * n <= (int64_t{1} << 20) && m >= 4 * kRowBlock && n >= Simd<T>::kLanes &&
         m * n * k >= (int64_t{1} << 18);
}

template <class T> PackedPanels<T>::PackedPanels(int64_t n, int64_t k) : n_(n), k_(k) {
  // The calling thread's buffer, kept from call to call: a fresh one of this size would be
  // mapped and faulted in by the allocator at every matmul, which costs more than the GEMM.
  using Vec = typename Simd<T>::Vec;
  thread_local std::vector<Vec> buffer;
  buffer.resize(std::max(buffer.size(), static_cast<size_t>(panels() * k * kWidth / Simd<T>::kLanes)));
  data_ = reinterpret_cast<T*>(buffer.data());
}

template <class T> void PackedPanels<T>::pack(bool transpose_b, const T* b, int64_t ldb, int64_t first, int64_t last) {
  for (int64_t p = first; p < last; ++p) {
    T* panel = data_ + p * k_ * kWidth;
    const int64_t columns = std::min(kWidth, n_ - p * kWidth);
    if (columns < kWidth) std::fill(panel, panel + k_ * kWidth, T(0));  // the last panel's columns past n
    if (!transpose_b) {
      for (int64_t kk = 0; kk < k_; ++kk) std::copy_n(b + kk * ldb + p * kWidth, columns, panel + kk * kWidth);
      continue;
    }
    // b's rows are the panel's columns: transposed in tiles of kTile rows of the panel, so that
    // each row of b is read a cache line at a time and the tile's writes stay in L1 (read a
    // column of b per row of the panel, the pack took 4.8% of an mlp step's perf samples; 3.0%
    // this way).
    constexpr int64_t kTile = 16;
    for (int64_t kk0 = 0; kk0 < k_; kk0 += kTile) {
      const int64_t rows = std::min(kTile, k_ - kk0);
      for (int64_t j = 0; j < columns; ++j) {
        const T* src = b + (p * kWidth + j) * ldb + kk0;
        T* dst = panel + kk0 * kWidth + j;
        for (int64_t t = 0; t < rows; ++t) dst[t * kWidth] = src[t];
      }
    }
  }
}

template <class T>
void PackedPanels<T>::multiply(bool transpose_a, int64_t m, const T* a, int64_t lda, T* c, int64_t ldc) const {
  using S = Simd<T>;
  using Vec = typename S::Vec;
  constexpr int64_t kLanes = S::kLanes;
  // op(a)(i, kk) is a[i * row_step + kk * k_step].
  const int64_t row_step = transpose_a ? 1 : lda, k_step = transpose_a ? lda : 1;
  // Panels outermost: each stays in L2 while every row block of op(a) goes through it.
  for (int64_t p = 0; p < panels(); ++p) {
    const int64_t columns = std::min(kWidth, n_ - p * kWidth);
    for (int64_t i0 = 0; i0 < m; i0 += kRowBlock) {
      with_block<kRowBlock>(m - i0, [&]<int RB>() {
        with_block<4>((columns + kLanes - 1) / kLanes, [&]<int VB>() {
          Vec acc[RB][VB] = {};
          const T* panel = data_ + p * k_ * kWidth;
          const T* ai = a + i0 * row_step;
          for (int64_t kk = 0; kk < k_; ++kk, panel += kWidth, ai += k_step) {
            Vec w[VB];
#pragma GCC unroll 8
            for (int v = 0; v < VB; ++v) w[v] = S::load(panel + v * kLanes);
#pragma GCC unroll 8
            for (int r = 0; r < RB; ++r) {
              const T x = ai[r * row_step];
#pragma GCC unroll 8
              for (int v = 0; v < VB; ++v) acc[r][v] += x * w[v];
            }
          }
          for (int r = 0; r < RB; ++r) {
            T* ci = c + (i0 + r) * ldc + p * kWidth;
            for (int v = 0; v < VB; ++v) {
              // Whole vectors in one store: lane by lane, a block's 384 stores cost as much as a
              // fifth of its multiply-adds when k is small (50 in lenet-relu's input gradient).
              const int64_t lanes = std::min(kLanes, columns - v * kLanes);
              if (lanes == kLanes) {
                S::store(ci + v * kLanes, acc[r][v]);
              } else {
                for (int64_t l = 0; l < lanes; ++l) ci[v * kLanes + l] = acc[r][v][l];
              }
            }
          }
        });
      });
    }
  }
}

template void gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                          float, float*, int64_t);
template void gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t, const double*,
                           int64_t, double, double*, int64_t);
template class PackedPanels<float>;
template class PackedPanels<double>;

}  // namespace duet::kernels::cpu
