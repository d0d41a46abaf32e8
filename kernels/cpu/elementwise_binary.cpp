// Binary and where kernels: the functors of functors.h run by map_elementwise.
#include <type_traits>

#include "duet/kernels/cpu/cpu_backend.h"
#include "duet/kernels/cpu/strided_loop.h"
#include "duet/kernels/dtype_checks.h"
#include "duet/kernels/functors.h"

namespace duet::kernels::cpu {
namespace {

namespace fn = functors;

// Integer division by zero would kill the process (SIGFPE); make it an error instead.
template <class F, class T> inline T apply_binary(T a, T b) {
  constexpr bool divides = std::is_same_v<F, fn::Div> || std::is_same_v<F, fn::FloorDivide>;
  if constexpr (divides && std::is_integral_v<T>) {
    if (b == T(0)) DUET_FAIL(std::is_same_v<F, fn::Div> ? "div" : "floor_divide", ": integer division by zero");
  }
  return static_cast<T>(F{}(a, b));
}

}  // namespace

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

void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  check_same_dtype("where", a, b);
  dispatch_dtype(out.dtype(), [&]<class T>() {
    map_elementwise<T, uint8_t, T, T>(
        "where", [](uint8_t c, T x, T y) { return c ? x : y; }, out, cond, a, b);
  });
}

}  // namespace duet::kernels::cpu
