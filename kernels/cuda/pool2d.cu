// Pooling on CUDA: max and average, sliding and adaptive, forward and backward, on the CPU's
// windows (AxisWindows, kernels/nn_layouts.h) and with its semantics (kernels/cpu/pool2d.cpp):
// padding never wins a max, a tie goes to the first in row-major window order and NaN to the
// last (as PyTorch's `val > max || isnan(val)`), the average
// divides by AxisWindows::divisor (count_include_pad, ceil mode), the adaptive window of
// output o is [floor(o * in / out), ceil((o + 1) * in / out)), and an activation before an
// average pooling is fused in as on the CPU.
//
// Forward: one thread per output. Backward: one thread per input element, gathering from the
// outputs whose windows cover it, in row-major output order (the order in which the CPU's general
// scatter adds), so no atomics are needed and the result depends only on the shapes. Max
// pooling's values, indices and backward are the CPU's bits (selection, and adds in the same
// order). The average's sums round as the CPU's general loops do, but its 2 x 2 loops add in
// another order, and an activation fused in uses the device's exp and tanh and fmas: within a
// few ulp, not bit for bit. Max backward adds the
// gradient of each covering output whose saved index is this element; a max window's taps may
// lie `dilation` apart (Window::step).
#include <algorithm>
#include <cmath>
#include <optional>
#include <type_traits>

#include "duet/kernels/cuda/block_reduce.cuh"
#include "duet/kernels/cuda/elementwise.cuh"
#include "duet/kernels/cuda/nn_launchers.h"
#include "duet/kernels/functors.h"
#include "duet/kernels/nn_layouts.h"

namespace duet::cuda {
namespace {

using kernels::PoolLayout;
using kernels::Window;

// Each kernel is a functor for launch_indexed (the build has no device lambdas, --extended-lambda),
// so each opens alike: its operands, its layout, operator()(index); the index math is PoolLayout's.

// The first maximum in row-major window order, or the last NaN (NaN propagates).
template <class T> struct MaxForward {
  const T* x;
  T* out;
  int64_t* indices;
  PoolLayout g;
  __device__ void operator()(int64_t o) const {
    const auto [p, oh, ow] = g.output_at(o);
    const T* plane = x + p * g.in_plane();
    const Window r = g.rows.at(oh), c = g.cols.at(ow);
    T best = kNegInfinity<T>;
    int64_t best_at = r.begin * g.cols.in + c.begin;  // an all -inf window keeps its first element
    for (int64_t ih = r.begin; ih < r.end; ih += r.step) {
      for (int64_t iw = c.begin; iw < c.end; iw += c.step) {
        const T v = plane[ih * g.cols.in + iw];
        if (v > best || std::isnan(v)) {
          best = v;
          best_at = ih * g.cols.in + iw;
        }
      }
    }
    out[o] = best;
    indices[o] = best_at;
  }
};

// grad_x at one input element: the gradients of the covering outputs whose maximum it was.
template <class T> struct MaxBackward {
  const T* grad_out;
  const int64_t* indices;
  T* grad_x;
  PoolLayout g;
  __device__ void operator()(int64_t i) const {
    const auto [p, ih, iw] = g.input_at(i);
    const int64_t position = ih * g.cols.in + iw;
    const T* go = grad_out + p * g.out_plane();
    const int64_t* at = indices + p * g.out_plane();
    const Window oh_range = g.rows.outputs_covering(ih), ow_range = g.cols.outputs_covering(iw);
    T sum = 0;
    for (int64_t oh = oh_range.begin; oh < oh_range.end; ++oh) {
      for (int64_t ow = ow_range.begin; ow < ow_range.end; ++ow) {
        const int64_t o = oh * g.cols.out + ow;
        if (at[o] == position) sum += go[o];
      }
    }
    grad_x[i] = sum;
  }
};

// The average of activation(x) over one window, F an activation functor (Identity when plain).
template <class T, class F> struct AverageForward {
  const T* x;
  T* out;
  PoolLayout g;
  __device__ void operator()(int64_t o) const {
    const auto [p, oh, ow] = g.output_at(o);
    const T* plane = x + p * g.in_plane();
    const Window r = g.rows.at(oh), c = g.cols.at(ow);
    T sum = 0;
    for (int64_t ih = r.begin; ih < r.end; ++ih)
      for (int64_t iw = c.begin; iw < c.end; ++iw) sum += F()(plane[ih * g.cols.in + iw]);
    out[o] = sum / static_cast<T>(g.divisor(oh, ow));
  }
};

// grad_x at one input element: the shares of every output window covering it, added in
// row-major output order as the CPU's scatter does, then through F's derivative at x (x is
// read only when F is not Identity).
template <class T, class F> struct AverageBackward {
  const T* grad_out;
  const T* x;
  T* grad_x;
  PoolLayout g;
  __device__ void operator()(int64_t i) const {
    const auto [p, ih, iw] = g.input_at(i);
    const T* go = grad_out + p * g.out_plane();
    const Window oh_range = g.rows.outputs_covering(ih), ow_range = g.cols.outputs_covering(iw);
    T sum = 0;
    for (int64_t oh = oh_range.begin; oh < oh_range.end; ++oh) {
      const Window r = g.rows.at(oh);
      if (ih < r.begin || ih >= r.end) continue;
      for (int64_t ow = ow_range.begin; ow < ow_range.end; ++ow) {
        const Window c = g.cols.at(ow);
        if (iw < c.begin || iw >= c.end) continue;
        sum += go[oh * g.cols.out + ow] / static_cast<T>(g.divisor(oh, ow));
      }
    }
    if constexpr (std::is_same_v<F, kernels::functors::Identity>) {
      grad_x[i] = sum;
    } else {
      grad_x[i] = F().backward(sum, x[i], F()(x[i]));
    }
  }
};

void average_forward(const char* op, const Tensor& x, const PoolLayout& g, std::optional<kernels::UnaryOp> activation,
                     const Tensor& out, cudaStream_t stream) {
  dispatch_floating(x.dtype(), op, [&]<class T>() {
    kernels::functors::dispatch_activation(activation, [&]<class F>() {
      launch_indexed(out.numel(), AverageForward<T, F>{x.data<T>(), out.data<T>(), g}, stream);
    });
  });
}

void average_backward(const char* op, const Tensor& grad_out, const Tensor& x, const PoolLayout& g,
                      std::optional<kernels::UnaryOp> activation, const Tensor& grad_x, cudaStream_t stream) {
  dispatch_floating(grad_x.dtype(), op, [&]<class T>() {
    kernels::functors::dispatch_activation(activation, [&]<class F>() {
      const T* xd = activation ? x.data<T>() : nullptr;
      launch_indexed(grad_x.numel(), AverageBackward<T, F>{grad_out.data<T>(), xd, grad_x.data<T>(), g}, stream);
    });
  });
}

void max_forward(const char* op, const Tensor& x, const PoolLayout& g, const Tensor& out, const Tensor& indices,
                 cudaStream_t stream) {
  dispatch_floating(x.dtype(), op, [&]<class T>() {
    launch_indexed(out.numel(), MaxForward<T>{x.data<T>(), out.data<T>(), indices.data<int64_t>(), g}, stream);
  });
}

}  // namespace

void launch_max_pool2d_forward(const Tensor& x, const kernels::Pool2dGeometry& geometry, const Tensor& out,
                               const Tensor& indices, cudaStream_t stream) {
  max_forward("max_pool2d_forward", x, PoolLayout::sliding(x, out, geometry), out, indices, stream);
}

void launch_max_pool2d_backward(const Tensor& grad_out, const Tensor& indices,
                                const std::optional<kernels::Pool2dGeometry>& window, const Tensor& grad_x,
                                cudaStream_t stream) {
  // The forward's windows, so that every saved index lies in a window covering it.
  const PoolLayout g = window ? PoolLayout::sliding(grad_x, grad_out, *window) : PoolLayout::adaptive(grad_x, grad_out);
  dispatch_floating(grad_x.dtype(), "max_pool2d_backward", [&]<class T>() {
    launch_indexed(grad_x.numel(), MaxBackward<T>{grad_out.data<T>(), indices.data<int64_t>(), grad_x.data<T>(), g},
                   stream);
  });
}

void launch_avg_pool2d_forward(const Tensor& x, const kernels::Pool2dGeometry& geometry,
                               std::optional<kernels::UnaryOp> activation, const Tensor& out, cudaStream_t stream) {
  average_forward("avg_pool2d_forward", x, PoolLayout::sliding(x, out, geometry), activation, out, stream);
}

void launch_avg_pool2d_backward(const Tensor& grad_out, const Tensor& x, const kernels::Pool2dGeometry& geometry,
                                std::optional<kernels::UnaryOp> activation, const Tensor& grad_x, cudaStream_t stream) {
  average_backward("avg_pool2d_backward", grad_out, x, PoolLayout::sliding(grad_x, grad_out, geometry), activation,
                   grad_x, stream);
}

void launch_adaptive_avg_pool2d_forward(const Tensor& x, const Tensor& out, cudaStream_t stream) {
  average_forward("adaptive_avg_pool2d_forward", x, PoolLayout::adaptive(x, out), std::nullopt, out, stream);
}

void launch_adaptive_avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_x, cudaStream_t stream) {
  average_backward("adaptive_avg_pool2d_backward", grad_out, Tensor(), PoolLayout::adaptive(grad_x, grad_out),
                   std::nullopt, grad_x, stream);
}

void launch_adaptive_max_pool2d_forward(const Tensor& x, const Tensor& out, const Tensor& indices,
                                        cudaStream_t stream) {
  max_forward("adaptive_max_pool2d_forward", x, PoolLayout::adaptive(x, out), out, indices, stream);
}

}  // namespace duet::cuda
