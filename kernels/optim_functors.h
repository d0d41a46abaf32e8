// The per-element math of the fused optimizer updates (optim_kernels.h), written once for the
// CPU loop (kernels/cpu/optim_update.cpp) and the CUDA kernel (kernels/cuda/optim_update.cu).
//
// A functor is built on the host from the update's arguments: each hyperparameter is rounded
// to T there, once, exactly as the unfused ops round a scalar operand (scalar_like). The
// element functions then round every intermediate in T in the unfused ops' order, so both
// paths give the same bits wherever the compiler does not contract a * b + c into one fma
// (the CPU file and the CUDA file are both built with contraction off for that reason).
// The options are selects, not branches around memory accesses, so the CPU loop vectorises.
#pragma once

#include <cmath>

#include "duet/core/macros.h"
#include "duet/kernels/functors.h"
#include "duet/kernels/optim_kernels.h"

namespace duet::kernels::functors {

template <class T> struct SgdMath {
  T weight_decay, momentum, dampening_complement, neg_lr;
  bool decay, nesterov, first_step, maximize;

  explicit SgdMath(const SgdUpdateArgs& a)
      : weight_decay(T(a.weight_decay)),
        momentum(T(a.momentum)),
        dampening_complement(T(1 - a.dampening)),
        neg_lr(T(-a.lr)),
        decay(a.weight_decay != 0),
        nesterov(a.nesterov),
        first_step(a.first_step),
        maximize(a.maximize) {}

  // PyTorch's order: the sign first (exact), then the decay, so maximize still decays the weights.
  DUET_HD T decayed(T p, T g) const {
    g = maximize ? -g : g;
    return decay ? g + p * weight_decay : g;
  }

  // Without momentum: param -= lr * g.
  DUET_HD void operator()(T& p, T g) const { p = p + decayed(p, g) * neg_lr; }

  // With momentum: the buffer first, then the step along it (or past it, for Nesterov).
  DUET_HD void operator()(T& p, T g, T& buf) const {
    g = decayed(p, g);
    T b = first_step ? g : buf * momentum + g * dampening_complement;
    buf = b;
    p = p + (nesterov ? g + b * momentum : b) * neg_lr;
  }
};

template <class T> struct AdamMath {
  T weight_decay, decoupled_factor, beta1, beta1_complement, beta2, beta2_complement, sqrt_bias2, eps, neg_step;
  bool coupled_decay, decoupled_decay, maximize;

  explicit AdamMath(const AdamUpdateArgs& a)
      : weight_decay(T(a.weight_decay)),
        decoupled_factor(T(1 - a.lr * a.weight_decay)),
        beta1(T(a.beta1)),
        beta1_complement(T(1 - a.beta1)),
        beta2(T(a.beta2)),
        beta2_complement(T(1 - a.beta2)),
        sqrt_bias2(T(std::sqrt(a.bias_correction2))),
        eps(T(a.eps)),
        neg_step(T(-a.lr / a.bias_correction1)),
        coupled_decay(a.weight_decay != 0 && !a.decoupled_weight_decay),
        decoupled_decay(a.weight_decay != 0 && a.decoupled_weight_decay),
        maximize(a.maximize) {}

  DUET_HD void operator()(T& p, T g, T& m, T& v) const {
    T m1, v1;
    const T decayed = moments(p, g, m, v, m1, v1);
    p = step(decayed, m1, v1);
  }

  // amsgrad: the denominator takes the running maximum of v, as torch.maximum(max_v, v) keeps it.
  DUET_HD void operator()(T& p, T g, T& m, T& v, T& max_v) const {
    T m1, v1;
    const T decayed = moments(p, g, m, v, m1, v1);
    const T max1 = Maximum{}(max_v, v1);
    max_v = max1;
    p = step(decayed, m1, max1);
  }

 private:
  // Updates m and v (also returned as m1 and v1) and returns the parameter after AdamW's decay.
  // maximize flips the gradient's sign before the decay, as PyTorch's.
  DUET_HD T moments(T p, T& g, T& m, T& v, T& m1, T& v1) const {
    g = maximize ? -g : g;
    g = coupled_decay ? g + p * weight_decay : g;
    const T decayed = decoupled_decay ? p * decoupled_factor : p;
    m1 = m * beta1 + g * beta1_complement;
    v1 = v * beta2 + (g * g) * beta2_complement;
    m = m1;
    v = v1;
    return decayed;
  }
  DUET_HD T step(T decayed, T m1, T second_moment) const {
    const T denom = std::sqrt(second_moment) / sqrt_bias2 + eps;
    return decayed + (m1 / denom) * neg_step;
  }
};

}  // namespace duet::kernels::functors
