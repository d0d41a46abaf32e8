// How the NN kernels see their contiguous operands, written once for the CPU loops and the CUDA
// kernels: a softmax row, a pooling window, a batch-norm channel, a convolution's patches.
//
// The index math is DUET_HD (kernels/functors.h does the same for the elementwise math), so the
// CPU tests cover the arithmetic the GPU runs. The factories (`of`, `sliding`, `adaptive`) read
// shapes on the host and check nothing: nn_dispatch.cpp has checked the operands against them
// before any kernel runs.
#pragma once

#include <cstdint>

#include "duet/core/macros.h"
#include "duet/core/tensor.h"
#include "duet/kernels/nn_kernels.h"

namespace duet::kernels {

// ---- softmax, log_softmax, cross-entropy ----

// A contiguous tensor reduced over dim d, seen as [outer, size, inner]: each of the
// outer * inner rows holds `size` elements `inner` apart.
struct RowLayout {
  int64_t outer = 1, size = 1, inner = 1;

  static RowLayout of(const Tensor& t, int64_t dim) {
    RowLayout l;
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (d < dim) l.outer *= t.size(d);
      if (d > dim) l.inner *= t.size(d);
    }
    l.size = t.dim() == 0 ? 1 : t.size(dim);
    return l;
  }
  DUET_HD int64_t rows() const { return outer * inner; }
  // The offset of row `row`'s first element.
  DUET_HD int64_t offset(int64_t row) const { return (row / inner) * size * inner + row % inner; }
};

// ---- pooling ----

// The input elements one output reads: begin, begin + step, ... below end (step > 1 for a
// dilated max pooling's taps).
struct Window {
  int64_t begin, end;  // clipped to the input; begin is a tap
  int64_t step = 1;
  // The last tap (begin when the window is empty).
  DUET_HD int64_t last() const { return end > begin ? begin + (end - 1 - begin) / step * step : begin; }
};

// How output positions along one axis map to input windows: a sliding window (kernel taps
// `dilation` apart, stride, zero padding), or adaptive (output o covers [floor(o * in / out),
// ceil((o + 1) * in / out))).
struct AxisWindows {
  int64_t in, out, kernel, stride, padding;
  bool adaptive;
  bool count_include_pad;  // a sliding average's divisor counts the padding
  int64_t dilation = 1;    // sliding max pooling only

  static AxisWindows sliding(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding,
                             bool count_include_pad, int64_t dilation = 1) {
    return {in, out, kernel, stride, padding, false, count_include_pad, dilation};
  }
  static AxisWindows adaptive_to(int64_t in, int64_t out) { return {in, out, 0, 1, 0, true, false}; }

  // The elements of the dilated kernel's span: (kernel - 1) * dilation + 1.
  DUET_HD int64_t span() const { return (kernel - 1) * dilation + 1; }
  DUET_HD Window at(int64_t o) const {
    if (adaptive) return {o * in / out, ((o + 1) * in + out - 1) / out};
    const int64_t start = o * stride - padding, end = start + span();
    // The first tap at or after 0, as PyTorch's `while (hstart < 0) hstart += dilation`.
    const int64_t begin = start >= 0 ? start : start + (-start + dilation - 1) / dilation * dilation;
    return {begin, end < in ? end : in, dilation};
  }
  // Whether every output's window holds at least one input element; a dilated window may not,
  // its taps all in the padding (PyTorch then reads outside the plane).
  DUET_HD bool windows_hold_input() const {
    for (int64_t o = 0; o < out; ++o) {
      const Window w = at(o);
      if (w.begin >= w.end) return false;
    }
    return true;
  }
  // The average's divisor along this axis (PyTorch's): with count_include_pad the window within
  // the padded input, which is the whole kernel except for a ceil-mode window running past it;
  // otherwise, and for adaptive windows, the window within the input.
  DUET_HD int64_t divisor(int64_t o) const {
    if (!adaptive && count_include_pad) {
      const int64_t begin = o * stride - padding, end = begin + kernel;
      return (end < in + padding ? end : in + padding) - begin;
    }
    const Window w = at(o);
    return w.end - w.begin;
  }
  // Input elements one output reads, at most.
  DUET_HD int64_t max_window() const { return adaptive ? (in + out - 1) / out + 1 : kernel; }
  // The outputs whose windows may hold input position i: a superset, the caller tests each.
  DUET_HD Window outputs_covering(int64_t i) const {
    int64_t first, last;
    if (adaptive) {
      first = i * out / in - 1;
      last = ((i + 1) * out + in - 1) / in + 1;
    } else {
      const int64_t lowest = i + padding - span() + 1;  // the first window reaching i starts here
      first = lowest <= 0 ? 0 : (lowest + stride - 1) / stride;
      last = (i + padding) / stride + 1;
    }
    return {first > 0 ? first : 0, last < out ? last : out};
  }
};

// An element of a pooling operand: its plane (n * C + c), row and column.
struct PlanePosition {
  int64_t plane, row, col;
};

// x [N, C, H, W] pooled to out [N, C, Ho, Wo]: N * C independent planes, rows and columns.
struct PoolLayout {
  int64_t planes;  // N * C
  AxisWindows rows, cols;
  int64_t divisor_override = 0;  // an average's divisor for every window; 0: the windows' own

  static PoolLayout sliding(const Tensor& x, const Tensor& out, const Pool2dGeometry& g) {
    return {x.size(0) * x.size(1),
            AxisWindows::sliding(x.size(2), out.size(2), g.kernel.h, g.stride.h, g.padding.h, g.count_include_pad,
                                 g.dilation.h),
            AxisWindows::sliding(x.size(3), out.size(3), g.kernel.w, g.stride.w, g.padding.w, g.count_include_pad,
                                 g.dilation.w),
            g.divisor_override};
  }
  static PoolLayout adaptive(const Tensor& x, const Tensor& out) {
    return {x.size(0) * x.size(1), AxisWindows::adaptive_to(x.size(2), out.size(2)),
            AxisWindows::adaptive_to(x.size(3), out.size(3))};
  }
  DUET_HD int64_t in_plane() const { return rows.in * cols.in; }
  DUET_HD int64_t out_plane() const { return rows.out * cols.out; }
  // Where flat index o of out [N * C, rows.out, cols.out], or i of x [N * C, rows.in, cols.in], lies.
  DUET_HD PlanePosition output_at(int64_t o) const {
    return {o / out_plane(), (o % out_plane()) / cols.out, o % cols.out};
  }
  DUET_HD PlanePosition input_at(int64_t i) const { return {i / in_plane(), (i % in_plane()) / cols.in, i % cols.in}; }
  // An average's divisor for output (oh, ow): the override, or the product of its axes' divisors.
  DUET_HD int64_t divisor(int64_t oh, int64_t ow) const {
    return divisor_override != 0 ? divisor_override : rows.divisor(oh) * cols.divisor(ow);
  }
};

// ---- batch norm ----

// x [N, C] or [N, C, H, W] seen as [N, C, S] (S = H * W, or 1): channel c holds N runs of S
// contiguous elements.
struct ChannelLayout {
  int64_t batch, channels, spatial;

  static ChannelLayout of(const Tensor& x) { return {x.size(0), x.size(1), x.dim() == 4 ? x.size(2) * x.size(3) : 1}; }
  DUET_HD int64_t count() const { return batch * spatial; }  // values per channel
  // The offset of channel c's j-th value, j < count().
  DUET_HD int64_t offset(int64_t c, int64_t j) const { return ((j / spatial) * channels + c) * spatial + j % spatial; }
  // Calls fn(offset) for the start of each of channel c's N runs.
  template <class Fn> void for_each_run(int64_t c, Fn&& fn) const {
    for (int64_t n = 0; n < batch; ++n) fn((n * channels + c) * spatial);
  }
};

// ---- conv2d ----

// x [N, C, H, W] (*) weight [K, C / groups, kh, kw] -> out [N, K, Ho, Wo]. The column matrix of
// one image (im2col) has one row per (c, ki, kj), c over all C channels, and one column per output
// pixel; its rows of group gi, [gi * patch_size(), (gi + 1) * patch_size()), times the weight rows
// of that group's filters, [gi * group_filters(), ...), give the group's outputs.
struct ConvLayout {
  int64_t batch, channels, height, width;  // x
  int64_t filters, kernel_h, kernel_w;     // weight
  PerAxis stride, padding, dilation;
  int64_t groups;
  int64_t out_h, out_w;

  static ConvLayout of(const Tensor& x, const Tensor& weight, const Tensor& out, const Conv2dGeometry& g) {
    return {x.size(0), x.size(1), x.size(2),  x.size(3), weight.size(0), weight.size(2), weight.size(3),
            g.stride,  g.padding, g.dilation, g.groups,  out.size(2),    out.size(3)};
  }
  DUET_HD int64_t group_channels() const { return channels / groups; }
  DUET_HD int64_t group_filters() const { return filters / groups; }
  DUET_HD int64_t patch_size() const { return group_channels() * kernel_h * kernel_w; }  // one filter's weights
  DUET_HD int64_t col_rows() const { return channels * kernel_h * kernel_w; }            // groups * patch_size()
  DUET_HD int64_t out_pixels() const { return out_h * out_w; }                           // columns
  DUET_HD int64_t col_size() const { return col_rows() * out_pixels(); }                 // one column matrix
  DUET_HD int64_t image_size() const { return channels * height * width; }
  // Where group gi's GEMM operands start: its filters' rows of the weight, its channels' rows of a
  // column matrix, its filters' planes of one image's output. All 0 for group 0.
  DUET_HD int64_t group_weight(int64_t gi) const { return gi * group_filters() * patch_size(); }
  DUET_HD int64_t group_col(int64_t gi) const { return gi * patch_size() * out_pixels(); }
  DUET_HD int64_t group_out(int64_t gi) const { return gi * group_filters() * out_pixels(); }
  // A 1x1 kernel with stride 1 and no padding: an image is its own column matrix (whatever the
  // groups: group gi's rows are its channels).
  DUET_HD bool is_pointwise() const {
    return kernel_h == 1 && kernel_w == 1 && stride.h == 1 && stride.w == 1 && padding.h == 0 && padding.w == 0;
  }
};

// ---- optional operands ----

// data<T>() of an optional operand (a bias, a running statistic, a gradient not wanted): null
// when undefined.
template <class T> T* data_or_null(const Tensor& t) { return t.defined() ? t.data<T>() : nullptr; }

}  // namespace duet::kernels
