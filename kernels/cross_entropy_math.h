// Cross-entropy's per-row math (nn_kernels.h, CrossEntropyTerms), written once for the CPU loops
// (kernels/cpu/cross_entropy.cpp) and the CUDA kernels (kernels/cuda/cross_entropy.cu), as
// kernels/functors.h does for the elementwise ops.
//
// plain(), neither class weights nor label smoothing, is the training hot path: its loss is
// -lp[t] and its gradient g * p - g at the target, exactly the fused kernel's arithmetic before
// the options existed. The other cases add terms, never passes over the logits.
#pragma once

#include <cstdint>

#include "duet/core/macros.h"
#include "duet/kernels/nn_kernels.h"

namespace duet::kernels {

template <class T> struct CrossEntropyMath {
  const T* weight;  // [C], or null: every class weighs 1
  int64_t classes, ignore_index;
  T keep, share;  // 1 - label_smoothing, and label_smoothing / C
  bool smoothing;

  CrossEntropyMath(const T* class_weights, int64_t num_classes, const CrossEntropyTerms& terms)
      : weight(class_weights),
        classes(num_classes),
        ignore_index(terms.ignore_index),
        keep(T(1 - terms.label_smoothing)),
        share(T(terms.label_smoothing / static_cast<double>(num_classes))),
        smoothing(terms.label_smoothing != 0) {}

  DUET_HD bool plain() const { return weight == nullptr && !smoothing; }
  DUET_HD bool ignored(int64_t t) const { return t == ignore_index; }
  // A target the kernels refuse: neither a class nor ignore_index.
  DUET_HD bool bad(int64_t t) const { return !ignored(t) && (t < 0 || t >= classes); }
  DUET_HD T class_weight(int64_t c) const { return weight ? weight[c] : T(1); }
  // What a row adds to total_weight, the weighted mean's divisor.
  DUET_HD T row_weight(int64_t t) const { return ignored(t) ? T(0) : class_weight(t); }

  // The loss of a row whose target t is a class, from nll = -lp[t] and, when smoothing,
  // smooth = sum_c w[c] * -lp[c]. PyTorch's order: (1 - s) * (w[t] * nll) + smooth * (s / C).
  DUET_HD T loss(int64_t t, T nll, T smooth) const {
    const T picked = weight ? weight[t] * nll : nll;
    return smoothing ? keep * picked + smooth * share : picked;
  }

  // d loss / d logit j = p_j * scale - (j == t ? picked : 0) - share * w[j], with
  // picked = (1 - s) * w[t] and scale = picked + share * W (W: the sum of the class weights).
  struct RowGrad {
    T scale, picked;
  };
  DUET_HD RowGrad row_grad(int64_t t, T weight_sum) const {
    const T picked = keep * class_weight(t);
    return {smoothing ? picked + share * weight_sum : picked, picked};
  }
  // W, for row_grad: C when unweighted; the caller sums the weights otherwise.
  DUET_HD T unweighted_sum() const { return T(classes); }

  // The gradient of logit j in a row whose target t is a class; g is the row's loss gradient and
  // p = exp(lp[j]).
  DUET_HD T grad(T g, T p, int64_t j, int64_t t, const RowGrad& r) const {
    if (plain()) {
      const T v = g * p;
      return j == t ? v - g : v;
    }
    T d = p * r.scale;
    if (j == t) d = d - r.picked;
    if (smoothing) d = d - share * class_weight(j);
    return g * d;
  }
};

}  // namespace duet::kernels
