// The math of every elementwise op, written once for the CPU loops and the CUDA kernels.
//
// A unary functor has  y = f(x)  and  dx = f.backward(g, x, y).
// A binary functor has y = f(a, b), da = f.grad_a(g, a, b, y), db = f.grad_b(g, a, b, y).
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <type_traits>

#include "duet/core/macros.h"
#include "duet/kernels/exp_f32.h"
#include "duet/kernels/kernels.h"

namespace duet::kernels::functors {

template <class T> DUET_HD inline T zero() { return T(0); }

// NaN test as a plain compare (vectorises, runs on the device); integers are never NaN.
template <class T> DUET_HD inline bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) return x != x;
  else return false;
}

// ---- unary ----
struct Neg {
  template <class T> DUET_HD T operator()(T x) const { return T(0) - x; }
  template <class T> DUET_HD T backward(T g, T, T) const { return -g; }
};
struct Exp {
  template <class T> DUET_HD T operator()(T x) const { return std::exp(x); }
  template <class T> DUET_HD T backward(T g, T, T y) const { return g * y; }
};
struct Log {
  template <class T> DUET_HD T operator()(T x) const { return std::log(x); }
  template <class T> DUET_HD T backward(T g, T x, T) const { return g / x; }
};
struct Sqrt {
  template <class T> DUET_HD T operator()(T x) const { return std::sqrt(x); }
  template <class T> DUET_HD T backward(T g, T, T y) const { return g / (T(2) * y); }
};
struct Abs {
  template <class T> DUET_HD T operator()(T x) const { return x < T(0) ? T(0) - x : x; }
  // The subgradient at 0 is 0, as in PyTorch.
  template <class T> DUET_HD T backward(T g, T x, T) const { return x > T(0) ? g : (x < T(0) ? -g : T(0)); }
};
// As PyTorch: NaN passes through (relu(NaN) = NaN, so a diverging network stays visible) and
// so does its gradient; relu(-0) = -0. One select each way, so the CPU loop stays vectorised.
struct Relu {
  template <class T> DUET_HD T operator()(T x) const { return x < T(0) ? T(0) : x; }
  template <class T> DUET_HD T backward(T g, T x, T) const { return x <= T(0) ? T(0) : g; }
};
struct Sigmoid {
  template <class T> DUET_HD T operator()(T x) const {
    // f32: branch-free, so CPU loops vectorise; exp_f32(-x) is +inf or 0 at the extremes,
    // which gives exactly 0 or 1.
    if constexpr (std::is_same_v<T, float>) {
      return 1.0f / (1.0f + exp_f32(-x));
    } else {  // f64 (gradcheck): split on the sign so exp never overflows
      if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
      T e = std::exp(x);
      return e / (T(1) + e);
    }
  }
  template <class T> DUET_HD T backward(T g, T, T y) const { return g * y * (T(1) - y); }
};
struct Tanh {
  template <class T> DUET_HD T operator()(T x) const { return std::tanh(x); }
  template <class T> DUET_HD T backward(T g, T, T y) const { return g * (T(1) - y * y); }
};

// Unary backward passes that read only the forward output y, so a caller may omit the input
// x (the backends then pass x = 0, which these backward functions ignore).
template <class F> inline constexpr bool backward_needs_only_output =
    std::is_same_v<F, Neg> || std::is_same_v<F, Exp> || std::is_same_v<F, Sqrt> || std::is_same_v<F, Sigmoid> ||
    std::is_same_v<F, Tanh>;

// ---- binary ----
struct Add {
  template <class T> DUET_HD T operator()(T a, T b) const { return a + b; }
  template <class T> DUET_HD T grad_a(T g, T, T, T) const { return g; }
  template <class T> DUET_HD T grad_b(T g, T, T, T) const { return g; }
};
struct Sub {
  template <class T> DUET_HD T operator()(T a, T b) const { return a - b; }
  template <class T> DUET_HD T grad_a(T g, T, T, T) const { return g; }
  template <class T> DUET_HD T grad_b(T g, T, T, T) const { return -g; }
};
struct Mul {
  template <class T> DUET_HD T operator()(T a, T b) const { return a * b; }
  template <class T> DUET_HD T grad_a(T g, T, T b, T) const { return g * b; }
  template <class T> DUET_HD T grad_b(T g, T a, T, T) const { return g * a; }
};
struct Div {
  template <class T> DUET_HD T operator()(T a, T b) const { return a / b; }
  template <class T> DUET_HD T grad_a(T g, T, T b, T) const { return g / b; }
  template <class T> DUET_HD T grad_b(T g, T, T b, T y) const { return -g * y / b; }
};
// torch.floor_divide (1.13: rounds toward -inf, as torch.div(rounding_mode='floor')), with
// PyTorch's own formulas so halfway cases and signed zeros agree. Piecewise constant: its
// gradient is 0, as torch.div(rounding_mode='floor') gives (torch.floor_divide has none).
// An integer divisor of 0 is the caller's to refuse (the CPU loop throws).
struct FloorDivide {
  template <class T> DUET_HD T operator()(T a, T b) const {
    if constexpr (std::is_unsigned_v<T>) {
      return static_cast<T>(a / b);
    } else if constexpr (std::is_integral_v<T>) {
      const T quot = static_cast<T>(a / b);
      // Truncation rounds toward 0: one less when the signs differ and it did not divide evenly.
      if ((a < T(0)) != (b < T(0)) && static_cast<T>(a % b) != T(0)) return static_cast<T>(quot - T(1));
      return quot;
    } else {
      if (b == T(0)) return a / b;  // IEEE: +-inf, or NaN for 0 / 0
      const T mod = std::fmod(a, b);
      T div = (a - mod) / b;
      if (mod != T(0) && (b < T(0)) != (mod < T(0))) div -= T(1);
      if (div == T(0)) return std::copysign(T(0), a / b);
      T floor_div = std::floor(div);
      if (div - floor_div > T(0.5)) floor_div += T(1);  // (a - mod) / b rounded just below an integer
      return floor_div;
    }
  }
  template <class T> DUET_HD T grad_a(T, T, T, T) const { return T(0); }
  template <class T> DUET_HD T grad_b(T, T, T, T) const { return T(0); }
};
struct Pow {
  template <class T> DUET_HD T operator()(T a, T b) const { return std::pow(a, b); }
  template <class T> DUET_HD T grad_a(T g, T a, T b, T) const {
    return b == T(0) ? T(0) : g * b * std::pow(a, b - T(1));
  }
  // d/db a^b = a^b log a. At a == 0 PyTorch takes it as 0 where b >= 0 (the limit, instead of
  // 0 * -inf) and keeps the formula's value where b < 0 (inf * -inf = -inf).
  template <class T> DUET_HD T grad_b(T g, T a, T b, T y) const {
    return a == T(0) && b >= T(0) ? T(0) : g * y * std::log(a);
  }
};
// As PyTorch: a NaN on either side gives NaN, and PyTorch's gradient rules: each side gets g
// unless the other side wins, a tie splits g evenly, and where a NaN is involved both sides
// get g (no comparison holds).
struct Maximum {
  template <class T> DUET_HD T operator()(T a, T b) const { return a > b || is_nan(a) ? a : b; }
  template <class T> DUET_HD T grad_a(T g, T a, T b, T) const { return a < b ? T(0) : (a == b ? g / T(2) : g); }
  template <class T> DUET_HD T grad_b(T g, T a, T b, T) const { return a > b ? T(0) : (a == b ? g / T(2) : g); }
};
struct Minimum {
  template <class T> DUET_HD T operator()(T a, T b) const { return a < b || is_nan(a) ? a : b; }
  template <class T> DUET_HD T grad_a(T g, T a, T b, T) const { return a > b ? T(0) : (a == b ? g / T(2) : g); }
  template <class T> DUET_HD T grad_b(T g, T a, T b, T) const { return a < b ? T(0) : (a == b ? g / T(2) : g); }
};

// Comparisons return 0 or 1 (stored as u8).
struct Eq {
  template <class T> DUET_HD uint8_t operator()(T a, T b) const { return a == b; }
};
struct Ne {
  template <class T> DUET_HD uint8_t operator()(T a, T b) const { return a != b; }
};
struct Lt {
  template <class T> DUET_HD uint8_t operator()(T a, T b) const { return a < b; }
};
struct Le {
  template <class T> DUET_HD uint8_t operator()(T a, T b) const { return a <= b; }
};
struct Gt {
  template <class T> DUET_HD uint8_t operator()(T a, T b) const { return a > b; }
};
struct Ge {
  template <class T> DUET_HD uint8_t operator()(T a, T b) const { return a >= b; }
};

// One switch per op family (as dispatch_dtype, core/dtype.h): each case reads as op -> functor.
// Calls fn.template operator()<Functor>() for the functor of `op` (host side).
template <class Fn> decltype(auto) dispatch_unary(UnaryOp op, Fn&& fn) {
  switch (op) {
    case UnaryOp::neg:
      return fn.template operator()<Neg>();
    case UnaryOp::exp:
      return fn.template operator()<Exp>();
    case UnaryOp::log:
      return fn.template operator()<Log>();
    case UnaryOp::sqrt:
      return fn.template operator()<Sqrt>();
    case UnaryOp::abs:
      return fn.template operator()<Abs>();
    case UnaryOp::relu:
      return fn.template operator()<Relu>();
    case UnaryOp::sigmoid:
      return fn.template operator()<Sigmoid>();
    case UnaryOp::tanh:
      return fn.template operator()<Tanh>();
  }
  DUET_FAIL("unknown unary op");
}

// The activation before a fused average pooling (kernels::avg_pool2d_forward): relu, sigmoid or
// tanh, or none (Identity). Calls fn.template operator()<Functor>().
struct Identity {
  template <class T> DUET_HD T operator()(T x) const { return x; }
  template <class T> DUET_HD T backward(T g, T, T) const { return g; }
};
constexpr bool pooling_can_fuse(UnaryOp op) {
  return op == UnaryOp::relu || op == UnaryOp::sigmoid || op == UnaryOp::tanh;
}
// Instantiates `fn` for the fusable activations alone, not for every unary op: the fused kernels
// exist only for these, and an unoptimised build keeps every branch of a switch, so dispatching
// through dispatch_unary would reference kernels that were never compiled.
template <class Fn> decltype(auto) dispatch_activation(std::optional<UnaryOp> op, Fn&& fn) {
  if (!op) return fn.template operator()<Identity>();
  // kernels::avg_pool2d_* refuse any other op, naming themselves; this guards the backends.
  DUET_CHECK(pooling_can_fuse(*op), "unary op ", name(*op), " is not an activation a pooling can fuse");
  if (*op == UnaryOp::sigmoid) return fn.template operator()<Sigmoid>();
  if (*op == UnaryOp::tanh) return fn.template operator()<Tanh>();
  return fn.template operator()<Relu>();
}

// Arithmetic ops only (not comparisons).
template <class Fn> decltype(auto) dispatch_arithmetic(BinaryOp op, Fn&& fn) {
  switch (op) {
    case BinaryOp::add:
      return fn.template operator()<Add>();
    case BinaryOp::sub:
      return fn.template operator()<Sub>();
    case BinaryOp::mul:
      return fn.template operator()<Mul>();
    case BinaryOp::div:
      return fn.template operator()<Div>();
    case BinaryOp::floor_divide:
      return fn.template operator()<FloorDivide>();
    case BinaryOp::pow:
      return fn.template operator()<Pow>();
    case BinaryOp::maximum:
      return fn.template operator()<Maximum>();
    case BinaryOp::minimum:
      return fn.template operator()<Minimum>();
    default:
      DUET_FAIL(name(op), " is a comparison, not an arithmetic op");
  }
}

template <class Fn> decltype(auto) dispatch_comparison(BinaryOp op, Fn&& fn) {
  switch (op) {
    case BinaryOp::eq:
      return fn.template operator()<Eq>();
    case BinaryOp::ne:
      return fn.template operator()<Ne>();
    case BinaryOp::lt:
      return fn.template operator()<Lt>();
    case BinaryOp::le:
      return fn.template operator()<Le>();
    case BinaryOp::gt:
      return fn.template operator()<Gt>();
    case BinaryOp::ge:
      return fn.template operator()<Ge>();
    default:
      DUET_FAIL(name(op), " is not a comparison");
  }
}

}  // namespace duet::kernels::functors
