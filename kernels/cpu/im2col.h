// im2col and col2im: the index math that turns a convolution into a GEMM, written once.
//
// For one image x [C, H, W] the column matrix has one row per (c, ki, kj), c over all C channels,
// and one column per output pixel (oh, ow):  col[(c * kh + ki) * kw + kj][oh * Wo + ow] =
// x[c][oh * stride.h - padding.h + ki * dilation.h][ow * stride.w - padding.w + kj * dilation.w],
// or 0 where that falls in the padding. Then out [K, Ho*Wo] = weight [K, C*kh*kw] @ col, one GEMM
// per group of channels (ConvLayout). col2im is its adjoint: it adds each column entry back onto
// the input pixel it came from. The sizes are ConvLayout's (kernels/nn_layouts.h), shared with the
// CUDA im2col.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "duet/kernels/nn_layouts.h"

namespace duet::kernels::cpu {

// The output positions o in [0, out) whose input position o * stride + offset lies in [0, in),
// as [first, last): a contiguous range, since the input position grows with o.
struct OutputRange {
  int64_t first, last;
};
inline OutputRange valid_outputs(int64_t out, int64_t in, int64_t offset, int64_t stride) {
  const int64_t first = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  const int64_t last = in - 1 - offset < 0 ? 0 : (in - 1 - offset) / stride + 1;
  const int64_t lo = std::min(first, out), hi = std::min(last, out);
  return {lo, std::max(lo, hi)};
}

// Copies n elements: 32-byte blocks, the last one overlapping the one before, so a short row
// (10 to 30 floats here) costs a few vector moves instead of a call to memmove.
template <class T> inline void copy_row(T* dst, const T* src, int64_t n) {
  constexpr int64_t kBlock = 32 / sizeof(T);
  if (n < kBlock) {
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
    return;
  }
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) std::memcpy(dst + i, src + i, 32);
  if (i < n) std::memcpy(dst + n - kBlock, src + n - kBlock, 32);
}

// Calls row(r, rows, cols, input_offset) for every row r = (c, ki, kj) of the column matrix:
// its output rows [rows.first, rows.last) and columns [cols.first, cols.last) read the input,
// starting at input_offset for (rows.first, cols.first) and moving by stride.w (columns) and
// stride.h * width (rows); every other entry of the row lies in the padding.
template <class Row> void for_each_patch_row(const ConvLayout& g, Row&& row) {
  for (int64_t c = 0; c < g.channels; ++c) {
    for (int64_t ki = 0; ki < g.kernel_h; ++ki) {
      const int64_t row_offset = ki * g.dilation.h - g.padding.h;
      const OutputRange rows = valid_outputs(g.out_h, g.height, row_offset, g.stride.h);
      for (int64_t kj = 0; kj < g.kernel_w; ++kj) {
        const int64_t col_offset = kj * g.dilation.w - g.padding.w;
        const OutputRange cols = valid_outputs(g.out_w, g.width, col_offset, g.stride.w);
        const int64_t ih = rows.first * g.stride.h + row_offset;
        const int64_t iw = cols.first * g.stride.w + col_offset;
        row((c * g.kernel_h + ki) * g.kernel_w + kj, rows, cols, (c * g.height + ih) * g.width + iw);
      }
    }
  }
}

// col [col_rows, out_pixels] from one image x [C, H, W].
template <class T> void im2col(const ConvLayout& g, const T* x, T* col) {
  const int64_t wo = g.out_w, pixels = g.out_pixels(), step = g.stride.h * g.width, sw = g.stride.w;
  for_each_patch_row(g, [&](int64_t r, OutputRange rows, OutputRange cols, int64_t in_offset) {
    T* dst = col + r * pixels;
    const T* src = x + in_offset;
    const int64_t n = cols.last - cols.first;
    std::fill(dst, dst + rows.first * wo, T(0));
    for (int64_t oh = rows.first; oh < rows.last; ++oh, src += step) {
      T* out = dst + oh * wo;
      std::fill(out, out + cols.first, T(0));
      if (sw == 1) {
        copy_row(out + cols.first, src, n);
      } else {
        for (int64_t i = 0; i < n; ++i) out[cols.first + i] = src[i * sw];
      }
      std::fill(out + cols.last, out + wo, T(0));
    }
    std::fill(dst + rows.last * wo, dst + pixels, T(0));
  });
}

// x [C, H, W] = the sum of col's entries onto the pixels they were read from (padding dropped).
template <class T> void col2im(const ConvLayout& g, const T* col, T* x) {
  std::fill(x, x + g.image_size(), T(0));
  const int64_t wo = g.out_w, step = g.stride.h * g.width, sw = g.stride.w;
  for_each_patch_row(g, [&](int64_t r, OutputRange rows, OutputRange cols, int64_t in_offset) {
    const T* src = col + r * g.out_pixels() + rows.first * wo + cols.first;
    T* dst = x + in_offset;
    const int64_t n = cols.last - cols.first;
    for (int64_t oh = rows.first; oh < rows.last; ++oh, src += wo, dst += step) {
      if (sw == 1) {  // contiguous: the loop vectorises
        for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
      } else {
        for (int64_t i = 0; i < n; ++i) dst[i * sw] += src[i];
      }
    }
  });
}

}  // namespace duet::kernels::cpu
