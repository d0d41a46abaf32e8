// conv2d as im2col + cuBLAS on CUDA: the fallback of conv2d.cpp, and the plain reference path
// under DUET_CONV_IM2COL=1. The index math is the CPU's (kernels/cpu/im2col.h), on the same
// ConvLayout (kernels/nn_layouts.h): for image x_n [C, H, W], col_n [C*kh*kw, Ho*Wo] holds
// col[(c*kh + ki)*kw + kj][oh*Wo + ow] = x[c][oh*stride.h - padding.h + ki*dilation.h]
// [ow*stride.w - padding.w + kj*dilation.w] (0 in the padding), and for each group of channels gi
// (ConvLayout's group offsets; one group unless `groups`)
//   forward        out_n[gi]    = W[gi] [K/g, C/g*kh*kw] @ col_n[gi]
//   input grad     grad_x_n     = col2im(dcol_n), dcol_n[gi] = W[gi]^T @ grad_out_n[gi]
//   weight grad    grad_W[gi]   = sum_n grad_out_n[gi] @ col_n[gi]^T, one GEMM (batched over the
//                  groups) per image, accumulated in image order on the stream (deterministic).
// GEMMs are row-major here; blas.h is column-major, so each call computes the transpose of the
// row-major product (C^T = B^T A^T), which is the same memory.
// col2im gathers (one thread per input element sums its column entries), so no atomics.
#include <algorithm>

#include "duet/kernels/cuda/blas.h"
#include "duet/kernels/cuda/conv2d.h"
#include "duet/kernels/cuda/elementwise.cuh"

namespace duet::cuda {
namespace {

// Column matrices of a chunk of images share one scratch buffer of at most this many elements
// (256 MiB of f32), or one image's if that is larger.
constexpr int64_t kColumnBudget = int64_t(1) << 26;

// Kernels are functors for launch_indexed (no device lambdas without --extended-lambda), so they
// open as pool2d.cu's do; the three directions below open alike too, around Chunks::for_each.

// col[b] for images b of a chunk starting at x: one thread per column entry.
template <class T> struct Im2col {
  const T* x;
  T* col;
  ConvLayout g;
  __device__ void operator()(int64_t i) const {
    const int64_t pixels = g.out_pixels(), per_image = g.col_size();
    const int64_t b = i / per_image, r = (i % per_image) / pixels, p = i % pixels;
    const int64_t c = r / (g.kernel_h * g.kernel_w), ki = (r / g.kernel_w) % g.kernel_h, kj = r % g.kernel_w;
    const int64_t ih = (p / g.out_w) * g.stride.h - g.padding.h + ki * g.dilation.h;
    const int64_t iw = (p % g.out_w) * g.stride.w - g.padding.w + kj * g.dilation.w;
    const bool inside = ih >= 0 && ih < g.height && iw >= 0 && iw < g.width;
    col[i] = inside ? x[((b * g.channels + c) * g.height + ih) * g.width + iw] : T(0);
  }
};

// grad_x at one input element of a chunk: the sum of the column entries it was copied to.
template <class T> struct Col2im {
  const T* col;
  T* grad_x;
  ConvLayout g;
  __device__ void operator()(int64_t i) const {
    const int64_t image = g.image_size(), pixels = g.out_pixels();
    const int64_t b = i / image, c = (i % image) / (g.height * g.width);
    const int64_t ih = (i / g.width) % g.height, iw = i % g.width;
    const T* col_b = col + b * g.col_size();
    T sum = 0;
    for (int64_t ki = 0; ki < g.kernel_h; ++ki) {
      const int64_t oh_scaled = ih + g.padding.h - ki * g.dilation.h;  // oh * stride.h
      if (oh_scaled < 0 || oh_scaled % g.stride.h != 0 || oh_scaled / g.stride.h >= g.out_h) continue;
      for (int64_t kj = 0; kj < g.kernel_w; ++kj) {
        const int64_t ow_scaled = iw + g.padding.w - kj * g.dilation.w;
        if (ow_scaled < 0 || ow_scaled % g.stride.w != 0 || ow_scaled / g.stride.w >= g.out_w) continue;
        const int64_t r = (c * g.kernel_h + ki) * g.kernel_w + kj;
        sum += col_b[r * pixels + (oh_scaled / g.stride.h) * g.out_w + ow_scaled / g.stride.w];
      }
    }
    grad_x[i] = sum;
  }
};

template <class T> struct AddChannelBias {
  T* out;
  const T* bias;
  int64_t channels, pixels;
  __device__ void operator()(int64_t i) const { out[i] += bias[(i / pixels) % channels]; }
};

// Images per chunk, and the scratch for their column matrices (none for a pointwise conv,
// whose images are their own column matrices).
struct Chunks {
  int64_t size;
  Tensor scratch;

  Chunks(const ConvLayout& g, DType dtype, Device device) {
    size = std::clamp<int64_t>(kColumnBudget / std::max<int64_t>(g.col_size(), 1), 1, g.batch);
    if (!g.is_pointwise()) scratch = empty_contiguous({size * g.col_size()}, dtype, device);
  }
  // Calls chunk(first, n) for the images [first, first + n) of each chunk, in image order.
  template <class ChunkFn> void for_each(const ConvLayout& g, ChunkFn&& chunk) const {
    for (int64_t first = 0; first < g.batch; first += size) chunk(first, std::min(size, g.batch - first));
  }
};

// The column matrices of images [first, first + n) of x: the images themselves when pointwise.
template <class T>
const T* columns(const ConvLayout& g, const Chunks& chunks, const T* x, int64_t first, int64_t n, cudaStream_t stream) {
  const T* images = x + first * g.image_size();
  if (g.is_pointwise()) return images;
  T* col = chunks.scratch.data<T>();
  launch_indexed(n * g.col_size(), Im2col<T>{images, col, g}, stream);
  return col;
}

template <class T> void forward_typed(const ConvLayout& g, const Tensor& x, const Tensor& weight, const Tensor& out,
                                      Device device, cudaStream_t stream) {
  const Chunks chunks(g, x.dtype(), device);
  const int64_t patch = g.patch_size(), pixels = g.out_pixels(), image_cols = g.col_size();
  chunks.for_each(g, [&](int64_t first, int64_t n) {
    const T* col = columns(g, chunks, x.data<T>(), first, n, stream);
    T* out_chunk = out.data<T>() + first * g.filters * pixels;
    // out_b[gi] [K/g, HW] = W[gi] [K/g, P] @ col_b[gi] [P, HW], as out_b[gi]^T = col_b[gi]^T W[gi]^T,
    // batched over the chunk's images.
    for (int64_t gi = 0; gi < g.groups; ++gi) {
      gemm_strided_batched<T>(device, false, false, pixels, g.group_filters(), patch, T(1), col + g.group_col(gi),
                              pixels, image_cols, weight.data<T>() + g.group_weight(gi), patch, 0, T(0),
                              out_chunk + g.group_out(gi), pixels, g.filters * pixels, n);
    }
  });
}

template <class T> void backward_input_typed(const ConvLayout& g, const Tensor& grad_out, const Tensor& weight,
                                             const Tensor& grad_x, Device device, cudaStream_t stream) {
  const Chunks chunks(g, grad_x.dtype(), device);
  const int64_t patch = g.patch_size(), pixels = g.out_pixels(), image_cols = g.col_size();
  chunks.for_each(g, [&](int64_t first, int64_t n) {
    T* grad_x_chunk = grad_x.data<T>() + first * g.image_size();
    const T* grad_out_chunk = grad_out.data<T>() + first * g.filters * pixels;
    // Pointwise: the column gradient is the image gradient, written in place.
    T* dcol = g.is_pointwise() ? grad_x_chunk : chunks.scratch.data<T>();
    // dcol_b[gi] [P, HW] = W[gi]^T [P, K/g] @ grad_out_b[gi] [K/g, HW], as dcol_b[gi]^T = grad_out_b[gi]^T W[gi].
    for (int64_t gi = 0; gi < g.groups; ++gi) {
      gemm_strided_batched<T>(device, false, true, pixels, patch, g.group_filters(), T(1),
                              grad_out_chunk + g.group_out(gi), pixels, g.filters * pixels,
                              weight.data<T>() + g.group_weight(gi), patch, 0, T(0), dcol + g.group_col(gi), pixels,
                              image_cols, n);
    }
    if (!g.is_pointwise()) launch_indexed(n * g.image_size(), Col2im<T>{dcol, grad_x_chunk, g}, stream);
  });
}

template <class T> void backward_weight_typed(const ConvLayout& g, const Tensor& grad_out, const Tensor& x,
                                              const Tensor& grad_weight, Device device, cudaStream_t stream) {
  const Chunks chunks(g, x.dtype(), device);
  const int64_t patch = g.patch_size(), pixels = g.out_pixels(), image_cols = g.col_size();
  chunks.for_each(g, [&](int64_t first, int64_t n) {
    const T* col = columns(g, chunks, x.data<T>(), first, n, stream);
    for (int64_t b = 0; b < n; ++b) {
      // grad_W[gi] [K/g, P] (+)= grad_out_b[gi] [K/g, HW] @ col_b[gi]^T [HW, P], as
      // grad_W[gi]^T = col_b[gi] grad_out_b[gi]^T, batched over the groups (group_*(1): one group's step).
      const T beta = first + b == 0 ? T(0) : T(1);
      gemm_strided_batched<T>(device, true, false, patch, g.group_filters(), pixels, T(1), col + b * image_cols, pixels,
                              g.group_col(1), grad_out.data<T>() + (first + b) * g.filters * pixels, pixels,
                              g.group_out(1), beta, grad_weight.data<T>(), patch, g.group_weight(1), g.groups);
    }
  });
}

}  // namespace

void im2col_conv2d_forward(const ConvLayout& g, const Tensor& x, const Tensor& weight, const Tensor& out, Device device,
                           cudaStream_t stream) {
  dispatch_floating(x.dtype(), "conv2d_forward",
                    [&]<class T>() { forward_typed<T>(g, x, weight, out, device, stream); });
}

void im2col_conv2d_backward_input(const ConvLayout& g, const Tensor& grad_out, const Tensor& weight,
                                  const Tensor& grad_x, Device device, cudaStream_t stream) {
  dispatch_floating(grad_x.dtype(), "conv2d_backward_input",
                    [&]<class T>() { backward_input_typed<T>(g, grad_out, weight, grad_x, device, stream); });
}

void im2col_conv2d_backward_weight(const ConvLayout& g, const Tensor& grad_out, const Tensor& x,
                                   const Tensor& grad_weight, Device device, cudaStream_t stream) {
  dispatch_floating(x.dtype(), "conv2d_backward_weight",
                    [&]<class T>() { backward_weight_typed<T>(g, grad_out, x, grad_weight, device, stream); });
}

void add_channel_bias(const Tensor& out, const Tensor& bias, cudaStream_t stream) {
  dispatch_floating(out.dtype(), "conv2d_forward", [&]<class T>() {
    launch_indexed(out.numel(),
                   AddChannelBias<T>{out.data<T>(), bias.data<T>(), out.size(1), out.size(2) * out.size(3)}, stream);
  });
}

}  // namespace duet::cuda
