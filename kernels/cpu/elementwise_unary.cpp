// Unary kernels and their backward: the functors of functors.h run by map_elementwise.
#include <type_traits>

#include "duet/kernels/cpu/cpu_backend.h"
#include "duet/kernels/cpu/strided_loop.h"
#include "duet/kernels/dtype_checks.h"
#include "duet/kernels/functors.h"

namespace duet::kernels::cpu {

namespace fn = functors;

void unary(UnaryOp op, const Tensor& in, const Tensor& out) {
  const char* op_name = name(op);
  check_same_dtype(op_name, in, out);
  fn::dispatch_unary(op, [&]<class F>() {
    auto run = [&]<class T>() {
      if constexpr (std::is_same_v<F, fn::Abs> && std::is_unsigned_v<T>) {
        map_elementwise<T, T>(
            op_name, [](T x) { return x; }, out, in);
      } else {
        map_elementwise<T, T>(
            op_name, [](T x) { return static_cast<T>(F{}(x)); }, out, in);
      }
    };
    if constexpr (std::is_same_v<F, fn::Neg> || std::is_same_v<F, fn::Abs>) dispatch_dtype(in.dtype(), run);
    else dispatch_floating(in.dtype(), op_name, run);
  });
}

void unary_backward(UnaryOp op, const Tensor& grad, const Tensor& in, const Tensor& out, const Tensor& grad_in) {
  const char* op_name = name(op);
  fn::dispatch_unary(op, [&]<class F>() {
    dispatch_floating(grad_in.dtype(), op_name, [&]<class T>() {
      if (in.defined() && out.defined()) {
        map_elementwise<T, T, T, T>(
            op_name, [](T g, T x, T y) { return F{}.backward(g, x, y); }, grad_in, grad, in, out);
      } else if (in.defined()) {  // recompute y from x
        map_elementwise<T, T, T>(
            op_name, [](T g, T x) { return F{}.backward(g, x, F{}(x)); }, grad_in, grad, in);
      } else {
        DUET_CHECK(fn::backward_needs_only_output<F> && out.defined(), op_name, " backward: needs the forward input");
        map_elementwise<T, T, T>(
            op_name, [](T g, T y) { return F{}.backward(g, T(0), y); }, grad_in, grad, out);
      }
    });
  });
}

}  // namespace duet::kernels::cpu
