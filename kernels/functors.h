// The math of every elementwise op, written once for the CPU loops and the CUDA kernels.
//
// A unary functor has  y = f(x)  and  dx = f.backward(g, x, y).
// A binary functor has y = f(a, b), da = f.grad_a(g, a, b, y), db = f.grad_b(g, a, b, y).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "duet/core/macros.h"
#include "duet/kernels/exp_f32.h"
#include "duet/kernels/kernels.h"

namespace duet::kernels::functors {

template <class T> DUET_HD inline T zero() { return T(0); }

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
  template <class T> DUET_HD T backward(T g, T x, T) const {
    return x > T(0) ? g : (x < T(0) ? -g : T(0));
  }
};
struct Relu {
  template <class T> DUET_HD T operator()(T x) const { return x > T(0) ? x : T(0); }
  template <class T> DUET_HD T backward(T g, T x, T) const { return x > T(0) ? g : T(0); }
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
template <class F>
inline constexpr bool backward_needs_only_output =
    std::is_same_v<F, Neg> || std::is_same_v<F, Exp> || std::is_same_v<F, Sqrt> ||
    std::is_same_v<F, Sigmoid> || std::is_same_v<F, Tanh>;

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
struct Pow {
  template <class T> DUET_HD T operator()(T a, T b) const { return std::pow(a, b); }
  template <class T> DUET_HD T grad_a(T g, T a, T b, T) const {
    return b == T(0) ? T(0) : g * b * std::pow(a, b - T(1));
  }
  // d/db a^b = a^b log a; taken as 0 where a == 0 (PyTorch's convention), avoiding 0 * -inf.
  template <class T> DUET_HD T grad_b(T g, T a, T, T y) const {
    return a == T(0) ? T(0) : g * y * std::log(a);
  }
};
// On ties the gradient is split evenly, as in PyTorch.
struct Maximum {
  template <class T> DUET_HD T operator()(T a, T b) const { return a > b ? a : b; }
  template <class T> DUET_HD T grad_a(T g, T a, T b, T) const {
    return a > b ? g : (a == b ? g / T(2) : T(0));
  }
  template <class T> DUET_HD T grad_b(T g, T a, T b, T) const {
    return b > a ? g : (a == b ? g / T(2) : T(0));
  }
};
struct Minimum {
  template <class T> DUET_HD T operator()(T a, T b) const { return a < b ? a : b; }
  template <class T> DUET_HD T grad_a(T g, T a, T b, T) const {
    return a < b ? g : (a == b ? g / T(2) : T(0));
  }
  template <class T> DUET_HD T grad_b(T g, T a, T b, T) const {
    return b < a ? g : (a == b ? g / T(2) : T(0));
  }
};

// Comparisons return 0 or 1 (stored as u8).
struct Eq { template <class T> DUET_HD uint8_t operator()(T a, T b) const { return a == b; } };
struct Ne { template <class T> DUET_HD uint8_t operator()(T a, T b) const { return a != b; } };
struct Lt { template <class T> DUET_HD uint8_t operator()(T a, T b) const { return a < b; } };
struct Le { template <class T> DUET_HD uint8_t operator()(T a, T b) const { return a <= b; } };
struct Gt { template <class T> DUET_HD uint8_t operator()(T a, T b) const { return a > b; } };
struct Ge { template <class T> DUET_HD uint8_t operator()(T a, T b) const { return a >= b; } };

// Calls fn.template operator()<Functor>() for the functor of `op` (host side).
template <class Fn>
decltype(auto) dispatch_unary(UnaryOp op, Fn&& fn) {
  switch (op) {
    case UnaryOp::neg: return fn.template operator()<Neg>();
    case UnaryOp::exp: return fn.template operator()<Exp>();
    case UnaryOp::log: return fn.template operator()<Log>();
    case UnaryOp::sqrt: return fn.template operator()<Sqrt>();
    case UnaryOp::abs: return fn.template operator()<Abs>();
    case UnaryOp::relu: return fn.template operator()<Relu>();
    case UnaryOp::sigmoid: return fn.template operator()<Sigmoid>();
    case UnaryOp::tanh: return fn.template operator()<Tanh>();
  }
  DUET_FAIL("unknown unary op");
}

// Arithmetic ops only (not comparisons).
template <class Fn>
decltype(auto) dispatch_arithmetic(BinaryOp op, Fn&& fn) {
  switch (op) {
    case BinaryOp::add: return fn.template operator()<Add>();
    case BinaryOp::sub: return fn.template operator()<Sub>();
    case BinaryOp::mul: return fn.template operator()<Mul>();
    case BinaryOp::div: return fn.template operator()<Div>();
    case BinaryOp::pow: return fn.template operator()<Pow>();
    case BinaryOp::maximum: return fn.template operator()<Maximum>();
    case BinaryOp::minimum: return fn.template operator()<Minimum>();
    default: DUET_FAIL(name(op), " is a comparison, not an arithmetic op");
  }
}

template <class Fn>
decltype(auto) dispatch_comparison(BinaryOp op, Fn&& fn) {
  switch (op) {
    case BinaryOp::eq: return fn.template operator()<Eq>();
    case BinaryOp::ne: return fn.template operator()<Ne>();
    case BinaryOp::lt: return fn.template operator()<Lt>();
    case BinaryOp::le: return fn.template operator()<Le>();
    case BinaryOp::gt: return fn.template operator()<Gt>();
    case BinaryOp::ge: return fn.template operator()<Ge>();
    default: DUET_FAIL(name(op), " is not a comparison");
  }
}

}  // namespace duet::kernels::functors
