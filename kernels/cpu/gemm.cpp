#include "duet/kernels/cpu/gemm.h"

#include <cblas.h>

#include <algorithm>
#include <limits>
#include <type_traits>
#include <vector>

#include "duet/core/error.h"
#include "duet/kernels/cpu/simd.h"
#include "duet/kernels/cpu/transpose.h"

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
  return k <= 2048 && k * n <= (int64_t{1} << 20) && m >= 4 * kRowBlock && 2 * n > kLanes &&
         m * n * k >= (int64_t{1} << 18);
}

template <class T> PackedPanels<T>::PackedPanels(int64_t n, int64_t k)
    : n_(n), k_(k), width_(std::clamp<int64_t>((n + kLanes - 1) / kLanes, 1, 4) * kLanes) {
  // The calling thread's buffer, kept from call to call: a fresh one of this size would be
  // mapped and faulted in by the allocator at every matmul, which costs more than the GEMM.
  using Vec = typename Simd<T>::Vec;
  thread_local std::vector<Vec> buffer;
  buffer.resize(std::max(buffer.size(), static_cast<size_t>(panels() * k * width_ / kLanes)));
  data_ = reinterpret_cast<T*>(buffer.data());
}

template <class T> void PackedPanels<T>::pack(bool transpose_b, const T* b, int64_t ldb, int64_t first, int64_t last) {
  for (int64_t p = first; p < last; ++p) {
    T* panel = data_ + p * k_ * width_;
    const int64_t columns = std::min(width_, n_ - p * width_);
    if (columns < width_) std::fill(panel, panel + k_ * width_, T(0));  // the last panel's columns past n
    if (!transpose_b) {
      for (int64_t kk = 0; kk < k_; ++kk) std::copy_n(b + kk * ldb + p * width_, columns, panel + kk * width_);
      continue;
    }
    // b's rows are the panel's columns: transposed 16 x 16 floats at a time in registers
    // (transpose.h), not float by float with a load and a store for each.
    transpose(b + p * width_ * ldb, ldb, columns, k_, panel, width_);
  }
}

template <class T> void PackedPanels<T>::multiply(bool transpose_a, int64_t m, const T* a, int64_t lda, T* c,
                                                  int64_t ldc, int64_t first, int64_t last) const {
  using S = Simd<T>;
  using Vec = typename S::Vec;
  // op(a)(i, kk) is a[i * row_step + kk * k_step].
  const int64_t row_step = transpose_a ? 1 : lda, k_step = transpose_a ? lda : 1;
  // Panels outermost: each stays in L2 while every row block of op(a) goes through it.
  for (int64_t p = first; p < (last < 0 ? panels() : last); ++p) {
    const int64_t columns = std::min(width_, n_ - p * width_);
    for (int64_t i0 = 0; i0 < m; i0 += kRowBlock) {
      with_block<kRowBlock>(m - i0, [&]<int RB>() {
        with_block<4>((columns + kLanes - 1) / kLanes, [&]<int VB>() {
          Vec acc[RB][VB] = {};
          const T* panel = data_ + p * k_ * width_;
          const T* ai = a + i0 * row_step;
          for (int64_t kk = 0; kk < k_; ++kk, panel += width_, ai += k_step) {
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
          // Whole vectors in one store: lane by lane, a block's 384 stores cost as much as a fifth
          // of its multiply-adds when k is small (50 in lenet-relu's input gradient). Only the
          // last vector of a panel that ends mid-vector goes through a copy on the stack:
          // indexing acc's lanes anywhere kept all 24 accumulators on the stack after the loop,
          // a round trip through memory that a short k has too few multiply-adds to hide.
          // The address in locals: the stores (memcpy) may write anything, and the lambda's
          // captures were loaded again for each one, 11 instructions a store.
          T* const block = c + i0 * ldc + p * width_;
          const int64_t ld = ldc, last_lanes = columns - (VB - 1) * kLanes;
#pragma GCC unroll 8
          for (int r = 0; r < RB; ++r) {
#pragma GCC unroll 8
            for (int v = 0; v + 1 < VB; ++v) S::store(block + r * ld + v * kLanes, acc[r][v]);
            T* const last = block + r * ld + (VB - 1) * kLanes;
            if (last_lanes == kLanes) {
              S::store(last, acc[r][VB - 1]);
            } else {
              T lanes[kLanes];
              S::store(lanes, acc[r][VB - 1]);
              for (int64_t l = 0; l < last_lanes; ++l) last[l] = lanes[l];
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
