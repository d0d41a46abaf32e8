// softmax and log_softmax over any dim of a contiguous tensor, rows split over the pool.
#include "duet/kernels/cpu/cpu_backend.h"
#include "duet/kernels/cpu/softmax_rows.h"

namespace duet::kernels::cpu {
namespace {

enum class Kind { softmax, log_softmax };

void forward(Kind kind, const char* op, const Tensor& x, int64_t dim, const Tensor& out) {
  const RowLayout l = RowLayout::of(x, dim);
  if (x.numel() == 0) return;
  dispatch_floating(x.dtype(), op, [&]<class T>() {
    const T* xd = x.data<T>();
    T* od = out.data<T>();
    if (kind == Kind::log_softmax && l.inner == 1) {  // as cross-entropy's log-probabilities
      parallel_for(l.rows(), grain_for(l.size),
                   [&](int64_t begin, int64_t end) { log_softmax_rows(xd, od, begin, end, l.size); });
      return;
    }
    for_each_row(l, [&](int64_t at) {
      if (kind == Kind::softmax) softmax_row(xd + at, od + at, l.size, l.inner);
      else log_softmax_row(xd + at, od + at, l.size, l.inner);
    });
  });
}

// softmax:     grad_x = y * (g - sum(g * y))
// log_softmax: grad_x = g - exp(y) * sum(g)
void backward(Kind kind, const char* op, const Tensor& grad_out, const Tensor& out, int64_t dim, const Tensor& grad_x) {
  const RowLayout l = RowLayout::of(out, dim);
  if (out.numel() == 0) return;
  dispatch_floating(out.dtype(), op, [&]<class T>() {
    const T* gd = grad_out.data<T>();
    const T* yd = out.data<T>();
    T* gxd = grad_x.data<T>();
    const int64_t n = l.size, s = l.inner;
    for_each_row(l, [&](int64_t at) {
      const T *g = gd + at, *y = yd + at;
      T* gx = gxd + at;
      double dot = 0;
      for (int64_t j = 0; j < n; ++j) dot += kind == Kind::softmax ? g[j * s] * y[j * s] : g[j * s];
      const T total = static_cast<T>(dot);
      for (int64_t j = 0; j < n; ++j) {
        gx[j * s] = kind == Kind::softmax ? y[j * s] * (g[j * s] - total) : g[j * s] - std::exp(y[j * s]) * total;
      }
    });
  });
}

}  // namespace

void softmax_forward(const Tensor& x, int64_t dim, const Tensor& out) {
  forward(Kind::softmax, "softmax_forward", x, dim, out);
}
void softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim, const Tensor& grad_x) {
  backward(Kind::softmax, "softmax_backward", grad_out, out, dim, grad_x);
}
void log_softmax_forward(const Tensor& x, int64_t dim, const Tensor& out) {
  forward(Kind::log_softmax, "log_softmax_forward", x, dim, out);
}
void log_softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim, const Tensor& grad_x) {
  backward(Kind::log_softmax, "log_softmax_backward", grad_out, out, dim, grad_x);
}

}  // namespace duet::kernels::cpu
