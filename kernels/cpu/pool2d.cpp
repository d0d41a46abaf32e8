// Pooling on the CPU: direct loops over each input plane (n, c), planes split over the pool.
//
// Max, average and adaptive-average pooling differ only in how an output position maps to its
// input window (AxisWindows) and in what they do over it, so one plane loop serves all three
// and the backward passes scatter back into the plane they read, with no races between threads.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "duet/kernels/cpu/cpu_backend.h"
#include "duet/kernels/cpu/nn_common.h"
#include "duet/kernels/cpu/thread_pool.h"

namespace duet::kernels::cpu {
namespace {

struct Window {
  int64_t begin, end;  // clipped to the input
};

// How output positions along one axis map to input windows: a sliding window (kernel,
// stride, zero padding), or adaptive (output o covers [floor(o*in/out), ceil((o+1)*in/out))).
struct AxisWindows {
  int64_t in, out, kernel, stride, padding;
  bool adaptive;

  static AxisWindows sliding(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding) {
    return {in, out, kernel, stride, padding, false};
  }
  static AxisWindows adaptive_to(int64_t in, int64_t out) { return {in, out, 0, 0, 0, true}; }

  Window at(int64_t o) const {
    if (adaptive) return {o * in / out, ((o + 1) * in + out - 1) / out};
    const int64_t begin = o * stride - padding;
    return {std::max<int64_t>(begin, 0), std::min(begin + kernel, in)};
  }
  // The average's divisor along this axis: the whole window, padding included
  // (count_include_pad; in floor mode a window never reaches past the padding).
  int64_t divisor(int64_t o) const {
    if (!adaptive) return kernel;
    Window w = at(o);
    return w.end - w.begin;
  }
  // Input elements one output reads, at most: for the loop grain.
  int64_t max_window() const { return adaptive ? (in + out - 1) / out + 1 : kernel; }
};

struct PoolGeometry {
  int64_t planes;  // N * C
  AxisWindows rows, cols;

  int64_t in_plane() const { return rows.in * cols.in; }
  int64_t out_plane() const { return rows.out * cols.out; }
};

// `op` names the caller when out's spatial size is not what the window gives: a window past
// the input's edge would read (and its backward write) outside the plane.
PoolGeometry sliding_geometry(const char* op, const Tensor& x, const Tensor& out, const Pool2dGeometry& geometry) {
  const auto [kernel, stride, padding] = geometry;
  DUET_CHECK(kernel >= 1 && stride >= 1 && padding >= 0 && 2 * padding <= kernel &&
                 out.size(2) == window_output_size(x.size(2), kernel, stride, padding) &&
                 out.size(3) == window_output_size(x.size(3), kernel, stride, padding),
             op, ": output ", out.describe(), " does not match input ", x.describe(), " with kernel ", kernel,
             ", stride ", stride, ", padding ", padding);
  return {x.size(0) * x.size(1), AxisWindows::sliding(x.size(2), out.size(2), kernel, stride, padding),
          AxisWindows::sliding(x.size(3), out.size(3), kernel, stride, padding)};
}

PoolGeometry adaptive_geometry(const Tensor& x, const Tensor& out) {
  return {x.size(0) * x.size(1), AxisWindows::adaptive_to(x.size(2), out.size(2)),
          AxisWindows::adaptive_to(x.size(3), out.size(3))};
}

void check_pool_shapes(const char* op, const Tensor& x, const Tensor& out) {
  DUET_CHECK(x.dim() == 4 && out.dim() == 4 && x.size(0) == out.size(0) && x.size(1) == out.size(1), op,
             ": shapes do not match: input ", x.describe(), ", output ", out.describe());
}

// Runs plane(p) for every plane p, in parallel.
template <class PlaneFn>
void for_each_plane(const PoolGeometry& g, PlaneFn&& plane) {
  const int64_t work = g.out_plane() * g.rows.max_window() * g.cols.max_window() + g.in_plane();
  parallel_for(g.planes, grain_for(work), [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) plane(p);
  });
}

// The maximum of one window and its position in the plane: the first maximum in row-major
// order, or the first NaN (NaN propagates, as in PyTorch). The common path is branch-free
// selects: on real data whether an element is a new maximum is a coin flip the branch
// predictor keeps losing (this halved the time). A window holding a NaN is rescanned.
template <class T>
std::pair<T, int64_t> window_max(const T* plane, int64_t width, Window r, Window c) {
  T best = -std::numeric_limits<T>::infinity();
  int64_t best_at = r.begin * width + c.begin;  // an all -inf window keeps its first element
  bool saw_nan = false;
  for (int64_t ih = r.begin; ih < r.end; ++ih) {
    for (int64_t iw = c.begin; iw < c.end; ++iw) {
      const T v = plane[ih * width + iw];
      const bool larger = v > best;  // false for NaN
      best = larger ? v : best;
      best_at = larger ? ih * width + iw : best_at;
      saw_nan |= v != v;
    }
  }
  if (saw_nan) {
    for (int64_t ih = r.begin; ih < r.end; ++ih)
      for (int64_t iw = c.begin; iw < c.end; ++iw)
        if (std::isnan(plane[ih * width + iw])) return {plane[ih * width + iw], ih * width + iw};
  }
  return {best, best_at};
}

template <class T>
void max_forward_typed(const Tensor& x, const PoolGeometry& g, const Tensor& out, const Tensor& indices) {
  const T* xd = x.data<T>();
  T* od = out.data<T>();
  int64_t* id = indices.data<int64_t>();
  for_each_plane(g, [&](int64_t p) {
    const T* plane = xd + p * g.in_plane();
    for (int64_t oh = 0; oh < g.rows.out; ++oh) {
      const Window r = g.rows.at(oh);
      for (int64_t ow = 0; ow < g.cols.out; ++ow) {
        const auto [value, position] = window_max(plane, g.cols.in, r, g.cols.at(ow));
        od[p * g.out_plane() + oh * g.cols.out + ow] = value;
        id[p * g.out_plane() + oh * g.cols.out + ow] = position;
      }
    }
  });
}

template <class T>
void max_backward_typed(const Tensor& grad_out, const Tensor& indices, const PoolGeometry& g,
                        const Tensor& grad_x) {
  const T* gd = grad_out.data<T>();
  const int64_t* id = indices.data<int64_t>();
  T* gxd = grad_x.data<T>();
  for_each_plane(g, [&](int64_t p) {
    T* gx = gxd + p * g.in_plane();
    std::fill(gx, gx + g.in_plane(), T(0));
    for (int64_t o = p * g.out_plane(); o < (p + 1) * g.out_plane(); ++o) gx[id[o]] += gd[o];
  });
}

// 2x2 windows with stride 2 and no padding, d2l's LeNets' pooling: every output reads a
// full window, so the loops need no clipping and the compiler can vectorise them (the
// general loops below took about 3x longer here).
bool is_two_by_two(const PoolGeometry& g) {
  auto plain = [](const AxisWindows& a) { return !a.adaptive && a.kernel == 2 && a.stride == 2 && a.padding == 0; };
  return plain(g.rows) && plain(g.cols);
}

template <class T>
void average_forward_2x2(const T* xd, const PoolGeometry& g, T* od) {
  const int64_t width = g.cols.in, out_w = g.cols.out;
  for_each_plane(g, [&](int64_t p) {
    const T* in = xd + p * g.in_plane();
    T* out = od + p * g.out_plane();
    for (int64_t oh = 0; oh < g.rows.out; ++oh) {
      const T* top = in + 2 * oh * width;
      const T* bottom = top + width;
      for (int64_t ow = 0; ow < out_w; ++ow) {
        out[oh * out_w + ow] = (top[2 * ow] + top[2 * ow + 1] + bottom[2 * ow] + bottom[2 * ow + 1]) * T(0.25);
      }
    }
  });
}

template <class T>
void average_backward_2x2(const T* gd, const PoolGeometry& g, T* gxd) {
  const int64_t width = g.cols.in, out_w = g.cols.out;
  for_each_plane(g, [&](int64_t p) {
    T* gx = gxd + p * g.in_plane();
    const T* grad = gd + p * g.out_plane();
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
  });
}

// Average and adaptive average: the sum over the window over the product of the divisors.
template <class T>
void average_forward_typed(const Tensor& x, const PoolGeometry& g, const Tensor& out) {
  const T* xd = x.data<T>();
  T* od = out.data<T>();
  if (is_two_by_two(g)) return average_forward_2x2(xd, g, od);
  const int64_t width = g.cols.in;
  for_each_plane(g, [&](int64_t p) {
    const T* in = xd + p * g.in_plane();
    for (int64_t oh = 0; oh < g.rows.out; ++oh) {
      const Window r = g.rows.at(oh);
      for (int64_t ow = 0; ow < g.cols.out; ++ow) {
        const Window c = g.cols.at(ow);
        T sum = 0;
        for (int64_t ih = r.begin; ih < r.end; ++ih)
          for (int64_t iw = c.begin; iw < c.end; ++iw) sum += in[ih * width + iw];
        od[p * g.out_plane() + oh * g.cols.out + ow] =
            sum / static_cast<T>(g.rows.divisor(oh) * g.cols.divisor(ow));
      }
    }
  });
}

template <class T>
void average_backward_typed(const Tensor& grad_out, const PoolGeometry& g, const Tensor& grad_x) {
  const T* gd = grad_out.data<T>();
  T* gxd = grad_x.data<T>();
  if (is_two_by_two(g)) return average_backward_2x2(gd, g, gxd);
  const int64_t width = g.cols.in;
  for_each_plane(g, [&](int64_t p) {
    T* gx = gxd + p * g.in_plane();
    std::fill(gx, gx + g.in_plane(), T(0));
    for (int64_t oh = 0; oh < g.rows.out; ++oh) {
      const Window r = g.rows.at(oh);
      for (int64_t ow = 0; ow < g.cols.out; ++ow) {
        const Window c = g.cols.at(ow);
        const T share = gd[p * g.out_plane() + oh * g.cols.out + ow] /
                        static_cast<T>(g.rows.divisor(oh) * g.cols.divisor(ow));
        for (int64_t ih = r.begin; ih < r.end; ++ih)
          for (int64_t iw = c.begin; iw < c.end; ++iw) gx[ih * width + iw] += share;
      }
    }
  });
}

void average_forward(const char* op, const Tensor& x, const PoolGeometry& g, const Tensor& out) {
  dispatch_floating(check_nn_operands(op, {x, out}), op, [&]<class T>() { average_forward_typed<T>(x, g, out); });
}

void average_backward(const char* op, const Tensor& grad_out, const PoolGeometry& g, const Tensor& grad_x) {
  dispatch_floating(check_nn_operands(op, {grad_out, grad_x}), op,
                    [&]<class T>() { average_backward_typed<T>(grad_out, g, grad_x); });
}

}  // namespace

void max_pool2d_forward(const Tensor& x, const Pool2dGeometry& geometry, const Tensor& out,
                        const Tensor& indices) {
  DType dtype = check_nn_operands("max_pool2d_forward", {x, out});
  check_index_operand("max_pool2d_forward", indices);
  check_pool_shapes("max_pool2d_forward", x, out);
  DUET_CHECK(indices.sizes() == out.sizes(), "max_pool2d_forward: indices ", indices.describe(),
             " do not match the output ", out.describe());
  PoolGeometry g = sliding_geometry("max_pool2d_forward", x, out, geometry);
  dispatch_floating(dtype, "max_pool2d_forward", [&]<class T>() { max_forward_typed<T>(x, g, out, indices); });
}

void max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, const Tensor& grad_x) {
  DType dtype = check_nn_operands("max_pool2d_backward", {grad_out, grad_x});
  check_index_operand("max_pool2d_backward", indices);
  check_pool_shapes("max_pool2d_backward", grad_x, grad_out);
  DUET_CHECK(indices.sizes() == grad_out.sizes(), "max_pool2d_backward: indices ", indices.describe(),
             " do not match the gradient ", grad_out.describe());
  // Only the plane sizes matter here: the saved indices already say where each maximum was.
  const PoolGeometry g{grad_x.size(0) * grad_x.size(1), AxisWindows::adaptive_to(grad_x.size(2), grad_out.size(2)),
                       AxisWindows::adaptive_to(grad_x.size(3), grad_out.size(3))};
  dispatch_floating(dtype, "max_pool2d_backward",
                    [&]<class T>() { max_backward_typed<T>(grad_out, indices, g, grad_x); });
}

void avg_pool2d_forward(const Tensor& x, const Pool2dGeometry& geometry, const Tensor& out) {
  check_pool_shapes("avg_pool2d_forward", x, out);
  average_forward("avg_pool2d_forward", x, sliding_geometry("avg_pool2d_forward", x, out, geometry),
                  out);
}

void avg_pool2d_backward(const Tensor& grad_out, const Pool2dGeometry& geometry,
                         const Tensor& grad_x) {
  check_pool_shapes("avg_pool2d_backward", grad_x, grad_out);
  average_backward("avg_pool2d_backward", grad_out,
                   sliding_geometry("avg_pool2d_backward", grad_x, grad_out, geometry), grad_x);
}

void adaptive_avg_pool2d_forward(const Tensor& x, const Tensor& out) {
  check_pool_shapes("adaptive_avg_pool2d_forward", x, out);
  average_forward("adaptive_avg_pool2d_forward", x, adaptive_geometry(x, out), out);
}

void adaptive_avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_x) {
  check_pool_shapes("adaptive_avg_pool2d_backward", grad_x, grad_out);
  average_backward("adaptive_avg_pool2d_backward", grad_out, adaptive_geometry(grad_x, grad_out), grad_x);
}

}  // namespace duet::kernels::cpu
