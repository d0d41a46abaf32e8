// The backward of the binary kernels: both partials, run by map_elementwise.
#include <type_traits>

#include "duet/kernels/cpu/cpu_backend.h"
#include "duet/kernels/cpu/strided_loop.h"
#include "duet/kernels/dtype_checks.h"
#include "duet/kernels/functors.h"

namespace duet::kernels::cpu {
namespace {

namespace fn = functors;

// target = partial(g, a, b, y) at out's shape; y is recomputed when `out` is undefined.
template <class T, class F, class Partial> void write_partial(const char* op, Partial partial, const Tensor& target,
                                                              const Tensor& grad, const Tensor& a, const Tensor& b,
                                                              const Tensor& out) {
  if (!target.defined()) return;
  if (out.defined()) {
    map_elementwise<T, T, T, T, T>(op, partial, target, grad, a, b, out);
  } else {
    map_elementwise<T, T, T, T>(
        op, [partial](T g, T x, T y) { return partial(g, x, y, F{}(x, y)); }, target, grad, a, b);
  }
}

}  // namespace

void binary_backward(BinaryOp op, const Tensor& grad, const Tensor& a, const Tensor& b, const Tensor& out,
                     const Tensor& grad_a, const Tensor& grad_b) {
  const char* op_name = name(op);
  check_same_dtype(op_name, a, b);
  fn::dispatch_arithmetic(op, [&]<class F>() {
    dispatch_floating(a.dtype(), op_name, [&]<class T>() {
      write_partial<T, F>(
          op_name, [](T g, T x, T y, T z) { return F{}.grad_a(g, x, y, z); }, grad_a, grad, a, b, out);
      write_partial<T, F>(
          op_name, [](T g, T x, T y, T z) { return F{}.grad_b(g, x, y, z); }, grad_b, grad, a, b, out);
    });
  });
}

}  // namespace duet::kernels::cpu
