// Transposing a block of a matrix: dst[j][i] = src[i][j]. In f32, whole 16 x 16 blocks go
// through registers, for duet's GEMM (packing a transposed op(b), gemm.cpp) and the direct
// convolutions (conv2d_direct.cpp), which turn a [pixels, filters] stage into [filters, pixels]
// and an output gradient into [pixels, filters].
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "duet/kernels/cpu/simd.h"

namespace duet::kernels::cpu {

// dst[t * ld_dst + r] = src[r * ld_src + t] for a 16 x 16 block of floats, in registers: pairs of
// rows interleaved by float, then by pairs of floats, which leaves a transposed 4 x 4 block in each
// 128-bit quarter; then the quarters gathered across vectors, twice. 64 shuffles for 256 floats
// moved, where float by float the pack spends a load and a store on each.
inline void transpose_16x16(const float* src, int64_t ld_src, float* dst, int64_t ld_dst) {
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

// dst[j * ld_dst + i] = src[i * ld_src + j] for i < rows, j < cols. The rows are taken 16 at a
// time from start to end (on mlp's weight, slightly faster than a block of columns across all
// rows; docs/performance.md); what is left of them, float by float in tiles of 16 columns, so that
// each row of src is read a cache line at a time and the tile's writes stay in L1.
template <class T> void transpose(const T* src, int64_t ld_src, int64_t rows, int64_t cols, T* dst, int64_t ld_dst) {
  constexpr int64_t kTile = 16;
  int64_t i0 = 0;
  if constexpr (std::is_same_v<T, float>) {
    const int64_t whole_cols = cols / kTile * kTile;
    for (; i0 + kTile <= rows; i0 += kTile) {
      for (int64_t j0 = 0; j0 < whole_cols; j0 += kTile) {
        transpose_16x16(src + i0 * ld_src + j0, ld_src, dst + j0 * ld_dst + i0, ld_dst);
      }
      for (int64_t i = i0; i < i0 + kTile; ++i) {
        for (int64_t j = whole_cols; j < cols; ++j) dst[j * ld_dst + i] = src[i * ld_src + j];
      }
    }
  }
  for (int64_t j0 = 0; j0 < cols && i0 < rows; j0 += kTile) {
    const int64_t j1 = std::min(cols, j0 + kTile);
    for (int64_t i = i0; i < rows; ++i) {
      for (int64_t j = j0; j < j1; ++j) dst[j * ld_dst + i] = src[i * ld_src + j];
    }
  }
}

}  // namespace duet::kernels::cpu
