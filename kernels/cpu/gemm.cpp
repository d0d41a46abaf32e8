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

// dst[t * ld_dst + r] = src[r * ld_src + t] for a 16 x 16 block of floats, in registers: pairs of
// rows interleaved by float, then by pairs of floats, which leaves a transposed 4 x 4 block in each
// 128-bit quarter; then the quarters gathered across vectors, twice. 64 shuffles for 256 floats
// moved, where one load and one store each took the pack 1.1 cycles a float.
void transpose_16x16(const float* src, int64_t ld_src, float* dst, int64_t ld_dst) {
  using Vec = Simd<float>::Vec;
  Vec v[16], a[16];
  for (int r = 0; r < 16; ++r) v[r] = Simd<float>::load(src + r * ld_src);
  for (int i = 0; i < 16; i += 2) {  // floats of rows i and i + 1 alternate, per quarter
    a[i] = __builtin_shufflevector(v[i], v[i + 1], 0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9, 25, 12, 28, 13, 29);
    a[i + 1] = __builtin_shufflevector(v[i], v[i + 1], 2, 18, 3, 19, 6, 22, 7, 23, 10, 26, 11, 27, 14, 30, 15, 31);
  }
  for (int i = 0; i < 16; i += 4) {  // quarter q of v[i + m] now holds column 4q + m of rows i..i+3
    for (int h = 0; h < 2; ++h) {
      v[i + 2 * h] =
          __builtin_shufflevector(a[i + h], a[i + h + 2], 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29);
      v[i + 2 * h + 1] =
          __builtin_shufflevector(a[i + h], a[i + h + 2], 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31);
    }
  }
  for (int m = 0; m < 4; ++m) {
    // Quarters 0-1 and 2-3 of the row groups 0, 1 (c) and 2, 3 (d), then column 4q + m from each.
    const Vec c01 = __builtin_shufflevector(v[m], v[4 + m], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
    const Vec c23 =
        __builtin_shufflevector(v[m], v[4 + m], 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
    const Vec d01 =
        __builtin_shufflevector(v[8 + m], v[12 + m], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
    const Vec d23 =
        __builtin_shufflevector(v[8 + m], v[12 + m], 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
    const Vec columns[4] = {
        __builtin_shufflevector(c01, d01, 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27),
        __builtin_shufflevector(c01, d01, 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31),
        __builtin_shufflevector(c23, d23, 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27),
        __builtin_shufflevector(c23, d23, 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31)};
    for (int q = 0; q < 4; ++q) Simd<float>::store(dst + (4 * q + m) * ld_dst, columns[q]);
  }
}

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
    // b's rows are the panel's columns. In f32, whole 16 x 16 blocks go through registers
    // (transpose_16x16), 16 rows of b at a time from start to end: packing mlp's 256 x 784
    // weight took 0.070 ms float by float, 0.018 this way (0.020 a block of k at a time across
    // all 64 rows).
    constexpr int64_t kTile = 16;
    int64_t j0 = 0;
    if constexpr (std::is_same_v<T, float>) {
      const int64_t whole_k = k_ / kTile * kTile;
      for (; j0 + kTile <= columns; j0 += kTile) {
        const T* rows = b + (p * kWidth + j0) * ldb;
        for (int64_t kk0 = 0; kk0 < whole_k; kk0 += kTile) {
          transpose_16x16(rows + kk0, ldb, panel + kk0 * kWidth + j0, kWidth);
        }
        for (int64_t j = 0; j < kTile; ++j) {
          for (int64_t kk = whole_k; kk < k_; ++kk) panel[kk * kWidth + j0 + j] = rows[j * ldb + kk];
        }
      }
    }
    // The other columns float by float, in tiles of kTile rows of the panel, so that each row of
    // b is read a cache line at a time and the tile's writes stay in L1 (read a column of b per
    // row of the panel, the pack took 4.8% of an mlp step's perf samples; 3.0% this way).
    for (int64_t kk0 = 0; kk0 < k_ && j0 < columns; kk0 += kTile) {
      const int64_t rows = std::min(kTile, k_ - kk0);
      for (int64_t j = j0; j < columns; ++j) {
        const T* src = b + (p * kWidth + j) * ldb + kk0;
        T* dst = panel + kk0 * kWidth + j;
        for (int64_t t = 0; t < rows; ++t) dst[t * kWidth] = src[t];
      }
    }
  }
}

template <class T> void PackedPanels<T>::multiply(bool transpose_a, int64_t m, const T* a, int64_t lda, T* c,
                                                  int64_t ldc, int64_t first, int64_t last) const {
  using S = Simd<T>;
  using Vec = typename S::Vec;
  constexpr int64_t kLanes = S::kLanes;
  // op(a)(i, kk) is a[i * row_step + kk * k_step].
  const int64_t row_step = transpose_a ? 1 : lda, k_step = transpose_a ? lda : 1;
  // Panels outermost: each stays in L2 while every row block of op(a) goes through it.
  for (int64_t p = first; p < (last < 0 ? panels() : last); ++p) {
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
          // Whole vectors in one store: lane by lane, a block's 384 stores cost as much as a fifth
          // of its multiply-adds when k is small (50 in lenet-relu's input gradient). Only the
          // last vector of a panel that ends mid-vector goes through a copy on the stack:
          // indexing acc's lanes anywhere kept all 24 accumulators on the stack after the loop,
          // which cost k = 50 blocks 14% against k = 784 (100 against 116 GFLOP/s on one thread).
          // The address in locals: the stores (memcpy) may write anything, and the lambda's
          // captures were loaded again for each one, 11 instructions a store.
          T* const block = c + i0 * ldc + p * kWidth;
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
