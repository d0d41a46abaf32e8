// softmax and log_softmax over any dim of a contiguous tensor on CUDA, forward and backward:
// one block per row (softmax_rows.cuh).
#include "duet/kernels/cuda/nn_launchers.h"
#include "duet/kernels/cuda/softmax_rows.cuh"

namespace duet::cuda {
namespace {

enum class Kind { softmax, log_softmax };

template <class T, Kind kKind> struct ForwardRow {
  const T* x;
  T* y;
  RowLayout l;
  __device__ void operator()(int64_t row) const {
    const int64_t at = l.offset(row), s = l.inner;
    const RowStats<T> stats = row_stats(x + at, l.size, s);
    const T scale = static_cast<T>(1 / stats.sum_exp);
    for (int64_t j = threadIdx.x; j < l.size; j += blockDim.x) {
      const T v = x[at + j * s];
      y[at + j * s] = kKind == Kind::softmax ? std::exp(v - stats.max) * scale : log_softmax_value(v, stats);
    }
  }
};

// softmax:     grad_x = y * (g - sum(g * y))
// log_softmax: grad_x = g - exp(y) * sum(g)
template <class T, Kind kKind> struct BackwardRow {
  const T* g;
  const T* y;
  T* gx;
  RowLayout l;
  __device__ void operator()(int64_t row) const {
    const int64_t at = l.offset(row), s = l.inner;
    double dot = 0;
    for (int64_t j = threadIdx.x; j < l.size; j += blockDim.x)
      dot += kKind == Kind::softmax ? g[at + j * s] * y[at + j * s] : g[at + j * s];
    const T total = static_cast<T>(block_reduce(dot, SumOf<double>{}));
    for (int64_t j = threadIdx.x; j < l.size; j += blockDim.x) {
      const int64_t i = at + j * s;
      gx[i] = kKind == Kind::softmax ? y[i] * (g[i] - total) : g[i] - std::exp(y[i]) * total;
    }
  }
};

template <Kind kKind>
void forward(const char* op, const Tensor& x, int64_t dim, const Tensor& out, cudaStream_t stream) {
  const RowLayout l = RowLayout::of(x, dim);
  if (x.numel() == 0) return;
  dispatch_floating(x.dtype(), op, [&]<class T>() {
    launch_per_row(l.rows(), l.size, ForwardRow<T, kKind>{x.data<T>(), out.data<T>(), l}, stream);
  });
}

template <Kind kKind> void backward(const char* op, const Tensor& grad_out, const Tensor& out, int64_t dim,
                                    const Tensor& grad_x, cudaStream_t stream) {
  const RowLayout l = RowLayout::of(out, dim);
  if (out.numel() == 0) return;
  dispatch_floating(out.dtype(), op, [&]<class T>() {
    launch_per_row(l.rows(), l.size, BackwardRow<T, kKind>{grad_out.data<T>(), out.data<T>(), grad_x.data<T>(), l},
                   stream);
  });
}

}  // namespace

void launch_softmax_forward(bool log_softmax, const Tensor& x, int64_t dim, const Tensor& out, cudaStream_t stream) {
  if (log_softmax) forward<Kind::log_softmax>("log_softmax_forward", x, dim, out, stream);
  else forward<Kind::softmax>("softmax_forward", x, dim, out, stream);
}

void launch_softmax_backward(bool log_softmax, const Tensor& grad_out, const Tensor& out, int64_t dim,
                             const Tensor& grad_x, cudaStream_t stream) {
  if (log_softmax) backward<Kind::log_softmax>("log_softmax_backward", grad_out, out, dim, grad_x, stream);
  else backward<Kind::softmax>("softmax_backward", grad_out, out, dim, grad_x, stream);
}

}  // namespace duet::cuda
