// Unary, binary and where kernels: the functors of functors.h run by map_elementwise.
#include <type_traits>

#include "duet/kernels/cpu/cpu_backend.h"
#include "duet/kernels/cpu/strided_loop.h"
#include "duet/kernels/functors.h"

namespace duet::kernels::cpu {
namespace {

namespace fn = functors;

void check_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  DUET_CHECK(a.dtype() == b.dtype(), op, ": dtypes differ: ", a.describe(), " and ", b.describe());
}

// Integer division by zero would kill the process (SIGFPE); make it an error instead.
template <class F, class T> inline T apply_binary(T a, T b) {
  constexpr bool divides = std::is_same_v<F, fn::Div> || std::is_same_v<F, fn::FloorDivide>;
  if constexpr (divides && std::is_integral_v<T>) {
    if (b == T(0)) DUET_FAIL(std::is_same_v<F, fn::Div> ? "div" : "floor_divide", ": integer division by zero");
  }
  return static_cast<T>(F{}(a, b));
}

}  // namespace

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

void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  const char* op_name = name(op);
  check_same_dtype(op_name, a, b);
  if (is_comparison(op)) {
    fn::dispatch_comparison(op, [&]<class F>() {
      dispatch_dtype(a.dtype(), [&]<class T>() {
        map_elementwise<uint8_t, T, T>(
            op_name, [](T x, T y) { return F{}(x, y); }, out, a, b);
      });
    });
    return;
  }
  fn::dispatch_arithmetic(op, [&]<class F>() {
    auto run = [&]<class T>() {
      map_elementwise<T, T, T>(
          op_name, [](T x, T y) { return apply_binary<F>(x, y); }, out, a, b);
    };
    if constexpr (std::is_same_v<F, fn::Pow>) dispatch_floating(a.dtype(), op_name, run);
    else dispatch_dtype(a.dtype(), run);
  });
}

namespace {

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

void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  check_same_dtype("where", a, b);
  dispatch_dtype(out.dtype(), [&]<class T>() {
    map_elementwise<T, uint8_t, T, T>(
        "where", [](uint8_t c, T x, T y) { return c ? x : y; }, out, cond, a, b);
  });
}

}  // namespace duet::kernels::cpu
