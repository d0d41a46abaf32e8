// Pooling on CUDA: max, average and adaptive-average, forward and backward, with the CPU's
// semantics (kernels/cpu/pool2d.cpp): padding never wins a max, ties and NaN go to the first in
// row-major window order, the average divides by kernel * kernel (count_include_pad), and the
// adaptive window of output o is [floor(o * in / out), ceil((o + 1) * in / out)).
//
// Forward: one thread per output. Average backward: one thread per input element, gathering
// from the outputs whose windows cover it, in the CPU's order, so no atomics are needed.
// Max backward gets only the saved indices, not the window geometry (nn_kernels.h), so it cannot
// gather; it scatters instead, one thread per (n, c) plane walking its outputs in order:
// deterministic and equal to the CPU, but with only N * C threads of parallelism.
#include <algorithm>
#include <cmath>

#include "duet/kernels/cuda/block_reduce.cuh"
#include "duet/kernels/cuda/elementwise.cuh"
#include "duet/kernels/cuda/nn_checks.h"
#include "duet/kernels/cuda/nn_launchers.h"
#include "duet/kernels/nn_kernels.h"

namespace duet::cuda {
namespace {

struct Window {
  int64_t begin, end;  // clipped to the input
};

// How output positions along one axis map to input windows (as in the CPU's pool2d.cpp).
struct AxisWindows {
  int64_t in, out, kernel, stride, padding;
  bool adaptive;

  __device__ Window at(int64_t o) const {
    if (adaptive) return {o * in / out, ((o + 1) * in + out - 1) / out};
    const int64_t begin = o * stride - padding;
    return {begin > 0 ? begin : 0, begin + kernel < in ? begin + kernel : in};
  }
  __device__ int64_t divisor(int64_t o) const {
    if (!adaptive) return kernel;
    const Window w = at(o);
    return w.end - w.begin;
  }
  // Outputs whose windows may hold input position i: a superset, the caller tests each.
  __device__ Window outputs_covering(int64_t i) const {
    int64_t first, last;
    if (adaptive) {
      first = i * out / in - 1;
      last = ((i + 1) * out + in - 1) / in + 1;
    } else {
      const int64_t lowest = i + padding - kernel + 1;  // the first window reaching i starts here
      first = lowest <= 0 ? 0 : (lowest + stride - 1) / stride;
      last = (i + padding) / stride + 1;
    }
    return {first > 0 ? first : 0, last < out ? last : out};
  }
};

struct PoolGeometry {
  int64_t planes;  // N * C
  AxisWindows rows, cols;

  __host__ __device__ int64_t in_plane() const { return rows.in * cols.in; }
  __host__ __device__ int64_t out_plane() const { return rows.out * cols.out; }
};

AxisWindows sliding_axis(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding) {
  return {in, out, kernel, stride, padding, false};
}
AxisWindows adaptive_axis(int64_t in, int64_t out) { return {in, out, 0, 1, 0, true}; }

PoolGeometry sliding_geometry(const char* op, const Tensor& x, const Tensor& out,
                              const kernels::Pool2dGeometry& geometry) {
  const auto [kernel, stride, padding] = geometry;
  DUET_CHECK(kernel >= 1 && stride >= 1 && padding >= 0 && 2 * padding <= kernel &&
                 out.size(2) == kernels::window_output_size(x.size(2), kernel, stride, padding) &&
                 out.size(3) == kernels::window_output_size(x.size(3), kernel, stride, padding),
             op, ": output ", out.describe(), " does not match input ", x.describe(), " with kernel ", kernel,
             ", stride ", stride, ", padding ", padding);
  return {x.size(0) * x.size(1), sliding_axis(x.size(2), out.size(2), kernel, stride, padding),
          sliding_axis(x.size(3), out.size(3), kernel, stride, padding)};
}

PoolGeometry adaptive_geometry(const Tensor& x, const Tensor& out) {
  return {x.size(0) * x.size(1), adaptive_axis(x.size(2), out.size(2)), adaptive_axis(x.size(3), out.size(3))};
}

void check_pool_shapes(const char* op, const Tensor& x, const Tensor& out) {
  DUET_CHECK(x.dim() == 4 && out.dim() == 4 && x.size(0) == out.size(0) && x.size(1) == out.size(1), op,
             ": shapes do not match: input ", x.describe(), ", output ", out.describe());
}

// The first maximum in row-major window order, or the first NaN (NaN propagates).
template <class T>
struct MaxForward {
  const T* x;
  T* out;
  int64_t* indices;
  PoolGeometry g;
  __device__ void operator()(int64_t o) const {
    const int64_t p = o / g.out_plane(), oh = (o % g.out_plane()) / g.cols.out, ow = o % g.cols.out;
    const T* plane = x + p * g.in_plane();
    const Window r = g.rows.at(oh), c = g.cols.at(ow);
    T best = kNegInfinity<T>;
    int64_t best_at = r.begin * g.cols.in + c.begin;  // an all -inf window keeps its first element
    bool saw_nan = false;
    for (int64_t ih = r.begin; ih < r.end && !saw_nan; ++ih) {
      for (int64_t iw = c.begin; iw < c.end && !saw_nan; ++iw) {
        const T v = plane[ih * g.cols.in + iw];
        saw_nan = std::isnan(v);
        if (v > best || saw_nan) {
          best = v;
          best_at = ih * g.cols.in + iw;
        }
      }
    }
    out[o] = best;
    indices[o] = best_at;
  }
};

// One thread per plane: zero it, then add each output's gradient at its saved position, in
// output order (the CPU's order, so the sums are bit-identical).
template <class T>
struct MaxBackwardPlane {
  const T* grad_out;
  const int64_t* indices;
  T* grad_x;
  PoolGeometry g;
  __device__ void operator()(int64_t p) const {
    T* gx = grad_x + p * g.in_plane();
    for (int64_t i = 0; i < g.in_plane(); ++i) gx[i] = T(0);
    for (int64_t o = p * g.out_plane(); o < (p + 1) * g.out_plane(); ++o) gx[indices[o]] += grad_out[o];
  }
};

template <class T>
struct AverageForward {
  const T* x;
  T* out;
  PoolGeometry g;
  __device__ void operator()(int64_t o) const {
    const int64_t p = o / g.out_plane(), oh = (o % g.out_plane()) / g.cols.out, ow = o % g.cols.out;
    const T* plane = x + p * g.in_plane();
    const Window r = g.rows.at(oh), c = g.cols.at(ow);
    T sum = 0;
    for (int64_t ih = r.begin; ih < r.end; ++ih)
      for (int64_t iw = c.begin; iw < c.end; ++iw) sum += plane[ih * g.cols.in + iw];
    out[o] = sum / static_cast<T>(g.rows.divisor(oh) * g.cols.divisor(ow));
  }
};

// grad_x at one input element: the shares of every output window covering it, added in
// row-major output order as the CPU's scatter does.
template <class T>
struct AverageBackward {
  const T* grad_out;
  T* grad_x;
  PoolGeometry g;
  __device__ void operator()(int64_t i) const {
    const int64_t p = i / g.in_plane(), ih = (i % g.in_plane()) / g.cols.in, iw = i % g.cols.in;
    const T* go = grad_out + p * g.out_plane();
    const Window oh_range = g.rows.outputs_covering(ih), ow_range = g.cols.outputs_covering(iw);
    T sum = 0;
    for (int64_t oh = oh_range.begin; oh < oh_range.end; ++oh) {
      const Window r = g.rows.at(oh);
      if (ih < r.begin || ih >= r.end) continue;
      for (int64_t ow = ow_range.begin; ow < ow_range.end; ++ow) {
        const Window c = g.cols.at(ow);
        if (iw < c.begin || iw >= c.end) continue;
        sum += go[oh * g.cols.out + ow] / static_cast<T>(g.rows.divisor(oh) * g.cols.divisor(ow));
      }
    }
    grad_x[i] = sum;
  }
};

void average_forward(const char* op, const Tensor& x, const PoolGeometry& g, const Tensor& out,
                     cudaStream_t stream) {
  dispatch_floating(check_nn_operands(op, {x, out}), op, [&]<class T>() {
    launch_indexed(out.numel(), AverageForward<T>{x.data<T>(), out.data<T>(), g}, stream);
  });
}

void average_backward(const char* op, const Tensor& grad_out, const PoolGeometry& g, const Tensor& grad_x,
                      cudaStream_t stream) {
  dispatch_floating(check_nn_operands(op, {grad_out, grad_x}), op, [&]<class T>() {
    launch_indexed(grad_x.numel(), AverageBackward<T>{grad_out.data<T>(), grad_x.data<T>(), g}, stream);
  });
}

}  // namespace

void launch_max_pool2d_forward(const Tensor& x, const kernels::Pool2dGeometry& geometry, const Tensor& out,
                               const Tensor& indices, cudaStream_t stream) {
  const char* op = "max_pool2d_forward";
  const DType dtype = check_nn_operands(op, {x, out});
  check_index_operand(op, indices);
  check_pool_shapes(op, x, out);
  DUET_CHECK(indices.sizes() == out.sizes(), op, ": indices ", indices.describe(), " do not match the output ",
             out.describe());
  const PoolGeometry g = sliding_geometry(op, x, out, geometry);
  dispatch_floating(dtype, op, [&]<class T>() {
    launch_indexed(out.numel(), MaxForward<T>{x.data<T>(), out.data<T>(), indices.data<int64_t>(), g}, stream);
  });
}

void launch_max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, const Tensor& grad_x,
                                cudaStream_t stream) {
  const char* op = "max_pool2d_backward";
  const DType dtype = check_nn_operands(op, {grad_out, grad_x});
  check_index_operand(op, indices);
  check_pool_shapes(op, grad_x, grad_out);
  DUET_CHECK(indices.sizes() == grad_out.sizes(), op, ": indices ", indices.describe(),
             " do not match the gradient ", grad_out.describe());
  // Only the plane sizes matter: the saved indices say where each maximum was. (They come from
  // max_pool2d_forward, so each lies within its plane.)
  const PoolGeometry g = adaptive_geometry(grad_x, grad_out);
  dispatch_floating(dtype, op, [&]<class T>() {
    launch_indexed(g.planes, MaxBackwardPlane<T>{grad_out.data<T>(), indices.data<int64_t>(), grad_x.data<T>(), g},
                   stream);
  });
}

void launch_avg_pool2d_forward(const Tensor& x, const kernels::Pool2dGeometry& geometry, const Tensor& out,
                               cudaStream_t stream) {
  const char* op = "avg_pool2d_forward";
  check_pool_shapes(op, x, out);
  average_forward(op, x, sliding_geometry(op, x, out, geometry), out, stream);
}

void launch_avg_pool2d_backward(const Tensor& grad_out, const kernels::Pool2dGeometry& geometry,
                                const Tensor& grad_x, cudaStream_t stream) {
  const char* op = "avg_pool2d_backward";
  check_pool_shapes(op, grad_x, grad_out);
  average_backward(op, grad_out, sliding_geometry(op, grad_x, grad_out, geometry), grad_x, stream);
}

void launch_adaptive_avg_pool2d_forward(const Tensor& x, const Tensor& out, cudaStream_t stream) {
  const char* op = "adaptive_avg_pool2d_forward";
  check_pool_shapes(op, x, out);
  average_forward(op, x, adaptive_geometry(x, out), out, stream);
}

void launch_adaptive_avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_x, cudaStream_t stream) {
  const char* op = "adaptive_avg_pool2d_backward";
  check_pool_shapes(op, grad_x, grad_out);
  average_backward(op, grad_out, adaptive_geometry(grad_x, grad_out), grad_x, stream);
}

}  // namespace duet::cuda
