// Pooling on the CPU: direct loops over each input plane (n, c), planes split over the pool.
//
// Max and average pooling, sliding or adaptive, differ only in how an output position maps to its
// input window (AxisWindows, kernels/nn_layouts.h) and in what they do over it, so one plane loop
// serves all four and the backward passes scatter back into the plane they read, with no races
// between threads. Average pooling can read x through an activation (relu, sigmoid or tanh): the
// fused activation -> pooling of nn::Sequential, one pass over x each way.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "duet/kernels/cpu/cpu_backend.h"
#include "duet/kernels/cpu/nn_common.h"
#include "duet/kernels/cpu/pool_plane.h"
#include "duet/kernels/cpu/thread_pool.h"
#include "duet/kernels/functors.h"

namespace duet::kernels::cpu {

// 2x2 windows with stride 2 and no padding, d2l's LeNets' pooling: every output reads a
// full window, so the loops need no clipping and the compiler can vectorise them, which the
// general loops below, with their clipped windows, do not let it do. A ceil-mode window past an
// odd edge is not full.
bool is_two_by_two(const PoolLayout& g) {
  auto plain = [](const AxisWindows& a) {
    return !a.adaptive && a.kernel == 2 && a.stride == 2 && a.padding == 0 && a.dilation == 1 && 2 * a.out <= a.in;
  };
  return plain(g.rows) && plain(g.cols) && g.divisor_override == 0;
}

namespace {

// Runs range(begin, end) over ranges of the planes, in parallel.
template <class RangeFn> void for_each_plane_range(const PoolLayout& g, RangeFn&& range) {
  const int64_t work = g.out_plane() * g.rows.max_window() * g.cols.max_window() + g.in_plane();
  parallel_for(g.planes, grain_for(work), range);
}

// Runs plane(p) for every plane p, in parallel.
template <class PlaneFn> void for_each_plane(const PoolLayout& g, PlaneFn&& plane) {
  for_each_plane_range(g, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) plane(p);
  });
}

// Calls window(oh, ow, r, c) for every output (oh, ow) of a plane, in row-major order, with the
// rows r and columns c of the input window it reads.
template <class WindowFn> void for_each_window(const PoolLayout& g, WindowFn&& window) {
  for (int64_t oh = 0; oh < g.rows.out; ++oh) {
    const Window r = g.rows.at(oh);
    for (int64_t ow = 0; ow < g.cols.out; ++ow) window(oh, ow, r, g.cols.at(ow));
  }
}

// The maximum of the taps of one window, rows step_h and columns step_w apart, and its position
// in the plane: the first maximum in row-major order, or the last NaN (NaN propagates; PyTorch's
// `val > max || isnan(val)` keeps the last). The common path is branch-free selects: on real
// data whether an element is a new maximum is a coin flip the branch predictor keeps losing (this
// halved the time). A window holding a NaN is rescanned.
template <class T> inline std::pair<T, int64_t> strided_window_max(const T* plane, int64_t width, Window r, Window c,
                                                                   int64_t step_h, int64_t step_w) {
  T best = -std::numeric_limits<T>::infinity();
  int64_t best_at = r.begin * width + c.begin;  // an all -inf window keeps its first element
  bool saw_nan = false;
  for (int64_t ih = r.begin; ih < r.end; ih += step_h) {
    for (int64_t iw = c.begin; iw < c.end; iw += step_w) {
      const T v = plane[ih * width + iw];
      const bool larger = v > best;  // false for NaN
      best = larger ? v : best;
      best_at = larger ? ih * width + iw : best_at;
      saw_nan |= v != v;
    }
  }
  if (saw_nan) {
    for (int64_t ih = r.last(); ih >= r.begin; ih -= step_h)
      for (int64_t iw = c.last(); iw >= c.begin; iw -= step_w)
        if (std::isnan(plane[ih * width + iw])) return {plane[ih * width + iw], ih * width + iw};
  }
  return {best, best_at};
}

// Undilated windows get steps the compiler sees are 1, so their loops stay as fast as before.
template <class T> std::pair<T, int64_t> window_max(const T* plane, int64_t width, Window r, Window c) {
  if (r.step == 1 && c.step == 1) return strided_window_max(plane, width, r, c, 1, 1);
  return strided_window_max(plane, width, r, c, r.step, c.step);
}

template <class T>
void max_forward_typed(const Tensor& x, const PoolLayout& g, const Tensor& out, const Tensor& indices) {
  const T* xd = x.data<T>();
  T* od = out.data<T>();
  int64_t* id = indices.data<int64_t>();
  for_each_plane(g, [&](int64_t p) {
    const T* plane = xd + p * g.in_plane();
    for_each_window(g, [&](int64_t oh, int64_t ow, Window r, Window c) {
      const auto [value, position] = window_max(plane, g.cols.in, r, c);
      od[p * g.out_plane() + oh * g.cols.out + ow] = value;
      id[p * g.out_plane() + oh * g.cols.out + ow] = position;
    });
  });
}

template <class T>
void max_backward_typed(const Tensor& grad_out, const Tensor& indices, const PoolLayout& g, const Tensor& grad_x) {
  const T* gd = grad_out.data<T>();
  const int64_t* id = indices.data<int64_t>();
  T* gxd = grad_x.data<T>();
  for_each_plane(g, [&](int64_t p) {
    T* gx = gxd + p * g.in_plane();
    std::fill(gx, gx + g.in_plane(), T(0));
    for (int64_t o = p * g.out_plane(); o < (p + 1) * g.out_plane(); ++o) gx[id[o]] += gd[o];
  });
}

// One plane of 2x2 average pooling: `in` [H, W] -> `out` [Ho, Wo]. With an even width no pair
// of columns straddles two rows, so the horizontal sums of the whole plane are one contiguous
// pass the compiler vectorises, and the vertical sums add rows of them; row by row, LeNet-ReLU's
// 13 windows a row never filled a vector.
// `pairs` has room for H W / 2 values.
template <class T> void average_plane_2x2(const T* in, const PoolLayout& g, T* out, T* pairs) {
  const int64_t width = g.cols.in, out_w = g.cols.out, out_h = g.rows.out;
  if (2 * out_w == width) {
    T* h = pairs;
    for (int64_t j = 0; j < 2 * out_h * out_w; ++j) h[j] = in[2 * j] + in[2 * j + 1];
    for (int64_t oh = 0; oh < out_h; ++oh) {
      const T* top = h + 2 * oh * out_w;
      for (int64_t ow = 0; ow < out_w; ++ow) out[oh * out_w + ow] = (top[ow] + top[out_w + ow]) * T(0.25);
    }
    return;
  }
  for (int64_t oh = 0; oh < out_h; ++oh) {
    const T* top = in + 2 * oh * width;
    const T* bottom = top + width;
    for (int64_t ow = 0; ow < out_w; ++ow) {
      out[oh * out_w + ow] = (top[2 * ow] + top[2 * ow + 1] + bottom[2 * ow] + bottom[2 * ow + 1]) * T(0.25);
    }
  }
}

// Its adjoint: each window's share written to its four inputs. (Spreading the shares of a whole
// plane in one contiguous pass, as the forward sums it, does not pay: this pass is bound by
// writing grad_x, not by its loop; docs/performance.md.)
template <class T> void average_plane_2x2_backward(const T* grad, const PoolLayout& g, T* gx) {
  const int64_t width = g.cols.in, out_w = g.cols.out;
  // An odd last row or column belongs to no window.
  if (2 * g.rows.out < g.rows.in || 2 * out_w < width) std::fill(gx, gx + g.in_plane(), T(0));
  for (int64_t oh = 0; oh < g.rows.out; ++oh) {
    T* top = gx + 2 * oh * width;
    T* bottom = top + width;
    for (int64_t ow = 0; ow < out_w; ++ow) {
      const T share = grad[oh * out_w + ow] * T(0.25);
      top[2 * ow] = share;
      top[2 * ow + 1] = share;
      bottom[2 * ow] = share;
      bottom[2 * ow + 1] = share;
    }
  }
}

// One plane of average (or adaptive average) pooling: the sum over each window over its divisor.
template <class T> void average_plane(const T* in, const PoolLayout& g, T* out, T* pairs) {
  if (is_two_by_two(g)) return average_plane_2x2(in, g, out, pairs);
  for_each_window(g, [&](int64_t oh, int64_t ow, Window r, Window c) {
    T sum = 0;
    for (int64_t ih = r.begin; ih < r.end; ++ih)
      for (int64_t iw = c.begin; iw < c.end; ++iw) sum += in[ih * g.cols.in + iw];
    out[oh * g.cols.out + ow] = sum / static_cast<T>(g.divisor(oh, ow));
  });
}

// Its adjoint: each input gets the shares of the windows covering it, added in row-major order.
template <class T> void average_plane_backward(const T* grad, const PoolLayout& g, T* gx) {
  if (is_two_by_two(g)) return average_plane_2x2_backward(grad, g, gx);
  std::fill(gx, gx + g.in_plane(), T(0));
  for_each_window(g, [&](int64_t oh, int64_t ow, Window r, Window c) {
    const T share = grad[oh * g.cols.out + ow] / static_cast<T>(g.divisor(oh, ow));
    for (int64_t ih = r.begin; ih < r.end; ++ih)
      for (int64_t iw = c.begin; iw < c.end; ++iw) gx[ih * g.cols.in + iw] += share;
  });
}

}  // namespace

// A plane's activation is one contiguous pass into a buffer the size of the plane, which stays in
// cache for the pooling after it: inside the windows' strided loops instead, the activation would
// not vectorise (docs/performance.md has what that cost).
template <class T, class F> void average_activated_plane(const T* in, const PoolLayout& g, T* out, T* scratch) {
  if constexpr (!std::is_same_v<F, functors::Identity>) {
    for (int64_t i = 0; i < g.in_plane(); ++i) scratch[i] = F()(in[i]);
    in = scratch;
  }
  average_plane(in, g, out, scratch + g.in_plane());
}

// The plain pooling's gradient, then, in the same plane while it is in cache, through F's
// derivative at in (read only when F is not Identity).
template <class T, class F>
void average_activated_plane_backward(const T* grad, const T* in, const PoolLayout& g, T* gx) {
  average_plane_backward(grad, g, gx);
  if constexpr (!std::is_same_v<F, functors::Identity>) {
    const F f;
    for (int64_t i = 0; i < g.in_plane(); ++i) gx[i] = f.backward(gx[i], in[i], f(in[i]));
  }
}

#define DUET_AVERAGE_PLANE(T, F)                                                    \
  template void average_activated_plane<T, F>(const T*, const PoolLayout&, T*, T*); \
  template void average_activated_plane_backward<T, F>(const T*, const T*, const PoolLayout&, T*);
#define DUET_AVERAGE_PLANES(F) DUET_AVERAGE_PLANE(float, F) DUET_AVERAGE_PLANE(double, F)
DUET_AVERAGE_PLANES(functors::Identity)
DUET_AVERAGE_PLANES(functors::Relu)
DUET_AVERAGE_PLANES(functors::Sigmoid)
DUET_AVERAGE_PLANES(functors::Tanh)
#undef DUET_AVERAGE_PLANES
#undef DUET_AVERAGE_PLANE

namespace {

// Average pooling of activation(x), F an activation functor (kernels/functors.h; Identity for
// plain pooling), plane by plane.
template <class T, class F> void average_forward_typed(const Tensor& x, const PoolLayout& g, const Tensor& out) {
  const T* xd = x.data<T>();
  T* od = out.data<T>();
  for_each_plane_range(g, [&](int64_t begin, int64_t end) {
    std::vector<T> scratch(static_cast<size_t>(average_plane_scratch(g)));
    for (int64_t p = begin; p < end; ++p) {
      average_activated_plane<T, F>(xd + p * g.in_plane(), g, od + p * g.out_plane(), scratch.data());
    }
  });
}

// The gradient with respect to x (x is read only when F is not Identity).
template <class T, class F>
void average_backward_typed(const Tensor& grad_out, const Tensor& x, const PoolLayout& g, const Tensor& grad_x) {
  const T* gd = grad_out.data<T>();
  const T* xd = std::is_same_v<F, functors::Identity> ? nullptr : x.data<T>();
  T* gxd = grad_x.data<T>();
  for_each_plane(g, [&](int64_t p) {
    average_activated_plane_backward<T, F>(gd + p * g.out_plane(), xd ? xd + p * g.in_plane() : nullptr, g,
                                           gxd + p * g.in_plane());
  });
}

}  // namespace

void max_pool2d_forward(const Tensor& x, const Pool2dGeometry& geometry, const Tensor& out, const Tensor& indices) {
  const PoolLayout g = PoolLayout::sliding(x, out, geometry);
  dispatch_floating(x.dtype(), "max_pool2d_forward", [&]<class T>() { max_forward_typed<T>(x, g, out, indices); });
}

void adaptive_max_pool2d_forward(const Tensor& x, const Tensor& out, const Tensor& indices) {
  const PoolLayout g = PoolLayout::adaptive(x, out);
  dispatch_floating(x.dtype(), "adaptive_max_pool2d_forward",
                    [&]<class T>() { max_forward_typed<T>(x, g, out, indices); });
}

void max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, const std::optional<Pool2dGeometry>&,
                         const Tensor& grad_x) {
  // Only the plane sizes matter here: the saved indices already say where each maximum was, and
  // each plane scatters into itself in output order.
  const PoolLayout g = PoolLayout::adaptive(grad_x, grad_out);
  dispatch_floating(grad_x.dtype(), "max_pool2d_backward",
                    [&]<class T>() { max_backward_typed<T>(grad_out, indices, g, grad_x); });
}

void avg_pool2d_forward(const Tensor& x, const Pool2dGeometry& geometry, std::optional<UnaryOp> activation,
                        const Tensor& out) {
  const PoolLayout g = PoolLayout::sliding(x, out, geometry);
  dispatch_floating(x.dtype(), "avg_pool2d_forward", [&]<class T>() {
    functors::dispatch_activation(activation, [&]<class F>() { average_forward_typed<T, F>(x, g, out); });
  });
}

void avg_pool2d_backward(const Tensor& grad_out, const Tensor& x, const Pool2dGeometry& geometry,
                         std::optional<UnaryOp> activation, const Tensor& grad_x) {
  const PoolLayout g = PoolLayout::sliding(grad_x, grad_out, geometry);
  dispatch_floating(grad_x.dtype(), "avg_pool2d_backward", [&]<class T>() {
    functors::dispatch_activation(activation, [&]<class F>() { average_backward_typed<T, F>(grad_out, x, g, grad_x); });
  });
}

void adaptive_avg_pool2d_forward(const Tensor& x, const Tensor& out) {
  const PoolLayout g = PoolLayout::adaptive(x, out);
  dispatch_floating(x.dtype(), "adaptive_avg_pool2d_forward",
                    [&]<class T>() { average_forward_typed<T, functors::Identity>(x, g, out); });
}

void adaptive_avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_x) {
  const PoolLayout g = PoolLayout::adaptive(grad_x, grad_out);
  dispatch_floating(grad_x.dtype(), "adaptive_avg_pool2d_backward",
                    [&]<class T>() { average_backward_typed<T, functors::Identity>(grad_out, Tensor(), g, grad_x); });
}

}  // namespace duet::kernels::cpu
