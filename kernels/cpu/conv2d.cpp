// conv2d on the CPU: the direct kernels (conv2d_direct.h) where they pay, else im2col +
// single-threaded GEMMs per image, images split over the pool.
//
// Per image n (col_n = im2col(x_n), kernels/cpu/im2col.h) and group of channels gi (one group
// unless `groups`; ConvLayout says which rows of col_n and of W are the group's):
//   forward        out_n[gi]    = W[gi] [K/g, C/g*kh*kw] @ col_n[gi] (+ bias per row)
//   input grad     grad_x_n     = col2im(dcol_n), dcol_n[gi] = W[gi]^T @ grad_out_n[gi]
//   weight grad    grad_W[gi]   = sum_n grad_out_n[gi] @ col_n[gi]^T
// The weight gradient is a sum over images: each pool thread accumulates a fixed, contiguous
// share of the images into its own partial sum, and the partials are added in share order, so the
// result is the same run after run (for a given thread count).
#include <algorithm>
#include <vector>

#include "duet/kernels/conv2d_pool_composed.h"
#include "duet/kernels/conv_im2col_env.h"
#include "duet/kernels/cpu/conv2d_direct.h"
#include "duet/kernels/cpu/cpu_backend.h"
#include "duet/kernels/cpu/gemm.h"
#include "duet/kernels/cpu/im2col.h"
#include "duet/kernels/cpu/nn_common.h"
#include "duet/kernels/cpu/thread_pool.h"
#include "duet/kernels/functors.h"

namespace duet::kernels::cpu {
namespace {

bool direct_forward(const ConvLayout& g) { return !conv_im2col_requested() && direct_forward_pays(g); }
bool direct_input_grad(const ConvLayout& g) { return !conv_im2col_requested() && direct_input_grad_pays(g); }
bool direct_weight_grad(const ConvLayout& g) { return !conv_im2col_requested() && direct_weight_grad_pays(g); }

// The column matrix of image x_n: the image itself for a pointwise conv, else im2col into
// `buffer` (sized on first use, reused for the thread's next images).
template <class T> const T* columns_of(const ConvLayout& g, const T* image, std::vector<T>& buffer) {
  if (g.is_pointwise()) return image;
  buffer.resize(static_cast<size_t>(g.col_size()));
  im2col(g, image, buffer.data());
  return buffer.data();
}

template <class T>
void forward_typed(const Tensor& x, const Tensor& weight, const Tensor& bias, const ConvLayout& g, const Tensor& out) {
  const int64_t batch = g.batch, filters = g.filters, group_filters = g.group_filters();
  const int64_t patch = g.patch_size(), pixels = g.out_pixels();
  const T* xd = x.data<T>();
  const T* wd = weight.data<T>();
  const T* bd = data_or_null<T>(bias);
  T* od = out.data<T>();
  parallel_for(batch, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> buffer;
    for (int64_t n = begin; n < end; ++n) {
      const T* col = columns_of(g, xd + n * g.image_size(), buffer);
      T* on = od + n * filters * pixels;
      if (bd) {
        for (int64_t k = 0; k < filters; ++k) std::fill(on + k * pixels, on + (k + 1) * pixels, bd[k]);
      }
      // One group (the default): one GEMM at offsets 0, as before groups existed.
      for (int64_t gi = 0; gi < g.groups; ++gi) {
        gemm<T>(false, false, group_filters, pixels, patch, T(1), wd + g.group_weight(gi), patch, col + g.group_col(gi),
                pixels, bd ? T(1) : T(0), on + g.group_out(gi), pixels);
      }
    }
  });
}

template <class T>
void backward_input_typed(const Tensor& grad_out, const Tensor& weight, const ConvLayout& g, const Tensor& grad_x) {
  const int64_t batch = g.batch, filters = g.filters, group_filters = g.group_filters();
  const int64_t patch = g.patch_size(), pixels = g.out_pixels();
  const T* gd = grad_out.data<T>();
  const T* wd = weight.data<T>();
  T* gxd = grad_x.data<T>();
  parallel_for(batch, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> col;
    if (!g.is_pointwise()) col.resize(static_cast<size_t>(g.col_size()));
    for (int64_t n = begin; n < end; ++n) {
      const T* gn = gd + n * filters * pixels;
      T* gxn = gxd + n * g.image_size();
      // Pointwise: the column gradient is the image gradient, written in place.
      T* dcol = g.is_pointwise() ? gxn : col.data();
      for (int64_t gi = 0; gi < g.groups; ++gi) {
        gemm<T>(true, false, patch, pixels, group_filters, T(1), wd + g.group_weight(gi), patch, gn + g.group_out(gi),
                pixels, T(0), dcol + g.group_col(gi), pixels);
      }
      if (!g.is_pointwise()) col2im(g, col.data(), gxn);
    }
  });
}

template <class T>
void backward_weight_typed(const Tensor& grad_out, const Tensor& x, const ConvLayout& g, const Tensor& grad_weight) {
  const int64_t batch = g.batch, filters = g.filters, group_filters = g.group_filters();
  const int64_t patch = g.patch_size(), pixels = g.out_pixels(), weights = filters * patch;
  const T* gd = grad_out.data<T>();
  const T* xd = x.data<T>();
  T* gwd = grad_weight.data<T>();
  const int64_t shares = std::max<int64_t>(1, std::min<int64_t>(batch, pool_size()));
  // Share 0 accumulates straight into grad_weight; shares 1.. into their own partial sums.
  std::vector<T> partials(static_cast<size_t>((shares - 1) * weights));
  parallel_for(shares, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> buffer;
    for (int64_t share = begin; share < end; ++share) {
      T* acc = share == 0 ? gwd : partials.data() + (share - 1) * weights;
      std::fill(acc, acc + weights, T(0));
      for (int64_t n = batch * share / shares; n < batch * (share + 1) / shares; ++n) {
        const T* col = columns_of(g, xd + n * g.image_size(), buffer);
        for (int64_t gi = 0; gi < g.groups; ++gi) {
          gemm<T>(false, true, group_filters, patch, pixels, T(1), gd + n * filters * pixels + g.group_out(gi), pixels,
                  col + g.group_col(gi), pixels, T(1), acc + g.group_weight(gi), patch);
        }
      }
    }
  });
  // Each element sums the shares in order: the split over threads cannot change the result.
  parallel_for(weights, kNnGrainWork, [&](int64_t begin, int64_t end) {
    for (int64_t share = 1; share < shares; ++share) {
      const T* part = partials.data() + (share - 1) * weights;
      for (int64_t i = begin; i < end; ++i) gwd[i] += part[i];
    }
  });
}

// The layout of the convolution before a pooling (whose output is not a tensor here).
ConvLayout conv_layout_before_pool(const Tensor& x, const Tensor& weight, const Conv2dGeometry& conv) {
  const PerAxis out = conv2d_output_size(conv, {x.size(2), x.size(3)}, {weight.size(2), weight.size(3)});
  return {x.size(0),   x.size(1),    x.size(2),     x.size(3),   weight.size(0), weight.size(2), weight.size(3),
          conv.stride, conv.padding, conv.dilation, conv.groups, out.h,          out.w};
}

// The pooling of one of the convolution's planes into one of pooled's.
PoolLayout plane_pool_layout(const ConvLayout& g, const Tensor& pooled, const Pool2dGeometry& pool) {
  return {1,
          AxisWindows::sliding(g.out_h, pooled.size(2), pool.kernel.h, pool.stride.h, pool.padding.h,
                               pool.count_include_pad),
          AxisWindows::sliding(g.out_w, pooled.size(3), pool.kernel.w, pool.stride.w, pool.padding.w,
                               pool.count_include_pad),
          pool.divisor_override};
}

}  // namespace

// The entry points share a shape (empty result, layout, dtype) but each gives ConvLayout::of its
// own operands in x, weight, out's roles; a helper would hide which is which.
void conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dGeometry& geometry,
                    const Tensor& out) {
  if (out.numel() == 0) return;
  const ConvLayout g = ConvLayout::of(x, weight, out, geometry);
  dispatch_floating(x.dtype(), "conv2d_forward", [&]<class T>() {
    if (direct_forward(g))
      direct_conv_forward<T>(g, x.data<T>(), weight.data<T>(), data_or_null<T>(bias), out.data<T>());
    else forward_typed<T>(x, weight, bias, g, out);
  });
}

void conv2d_backward_input(const Tensor& grad_out, const Tensor& weight, const Conv2dGeometry& geometry,
                           const Tensor& grad_x) {
  if (grad_x.numel() == 0) return;
  const ConvLayout g = ConvLayout::of(grad_x, weight, grad_out, geometry);
  dispatch_floating(grad_x.dtype(), "conv2d_backward_input", [&]<class T>() {
    if (direct_input_grad(g)) direct_conv_backward_input<T>(g, grad_out.data<T>(), weight.data<T>(), grad_x.data<T>());
    else backward_input_typed<T>(grad_out, weight, g, grad_x);
  });
}

void conv2d_backward_weight(const Tensor& grad_out, const Tensor& x, const Conv2dGeometry& geometry,
                            const Tensor& grad_weight, const Tensor& grad_bias) {
  const ConvLayout g = ConvLayout::of(x, grad_weight, grad_out, geometry);
  // The direct kernels sum the bias gradient as they stage grad_out; otherwise it is a reduction.
  const bool direct = grad_weight.numel() > 0 && direct_weight_grad(g);
  if (grad_bias.defined() && !direct) {
    cpu::reduce(ReduceOp::sum, grad_out, {0, 2, 3}, grad_bias.view({1, grad_bias.size(0), 1, 1}));
  }
  if (grad_weight.numel() == 0) return;
  dispatch_floating(x.dtype(), "conv2d_backward_weight", [&]<class T>() {
    if (direct) {
      direct_conv_backward_weight<T>(g, grad_out.data<T>(), x.data<T>(), grad_weight.data<T>(),
                                     grad_bias.defined() ? grad_bias.data<T>() : nullptr);
    } else {
      backward_weight_typed<T>(grad_out, x, g, grad_weight);
    }
  });
}

// The fused convolution and pooling: image by image on the direct kernels' grid where they can
// compute the convolution, else the separate kernels.
void conv2d_avg_pool2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dGeometry& conv,
                               std::optional<UnaryOp> activation, const Pool2dGeometry& pool, const Tensor& out) {
  if (out.numel() == 0) return;
  const ConvLayout g = conv_layout_before_pool(x, weight, conv);
  if (!direct_conv_fits(g)) return composed_conv2d_avg_pool2d_forward(x, weight, bias, conv, activation, pool, out);
  const PoolLayout p = plane_pool_layout(g, out, pool);
  dispatch_floating(x.dtype(), "conv2d_avg_pool2d_forward", [&]<class T>() {
    functors::dispatch_activation(activation, [&]<class F>() {
      direct_conv_pool_forward<T, F>(g, p, x.data<T>(), weight.data<T>(), data_or_null<T>(bias), out.data<T>());
    });
  });
}

void conv2d_avg_pool2d_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight, const Tensor& bias,
                                const Conv2dGeometry& conv, std::optional<UnaryOp> activation,
                                const Pool2dGeometry& pool, const Tensor& grad_x, const Tensor& grad_weight,
                                const Tensor& grad_bias) {
  const ConvLayout g = conv_layout_before_pool(x, weight, conv);
  if (!direct_conv_fits(g) || grad_out.numel() == 0) {
    return composed_conv2d_avg_pool2d_backward(grad_out, x, weight, bias, conv, activation, pool, grad_x, grad_weight,
                                               grad_bias);
  }
  const PoolLayout p = plane_pool_layout(g, grad_out, pool);
  dispatch_floating(x.dtype(), "conv2d_avg_pool2d_backward", [&]<class T>() {
    functors::dispatch_activation(activation, [&]<class F>() {
      direct_conv_pool_backward<T, F>(g, p, grad_out.data<T>(), x.data<T>(), weight.data<T>(), data_or_null<T>(bias),
                                      data_or_null<T>(grad_x), data_or_null<T>(grad_weight),
                                      data_or_null<T>(grad_bias));
    });
  });
}

}  // namespace duet::kernels::cpu
