// Fused cross-entropy on the CPU: a log-softmax per row (softmax_rows.h; for [N, C] rows the
// exps of many f32 rows at once, log_softmax_rows) and the row's loss
// (kernels/cross_entropy_math.h); rows split over the pool. A row is the C class scores of one
// sample, or of one position of a [N, C, d1, ...] input, inner elements apart (RowLayout of dim 1).
#include <cmath>
#include <type_traits>

#include "duet/kernels/cpu/cpu_backend.h"
#include "duet/kernels/cpu/softmax_rows.h"
#include "duet/kernels/cross_entropy_math.h"

namespace duet::kernels::cpu {
namespace {

// Every target a class in [0, C) or ignore_index: only the kernel reads the target's memory (the
// shapes were checked by nn_dispatch.cpp). A serial pass before the parallel loop, so the error
// always names the first bad target. Returns the sum of the rows' weights (total_weight).
template <class T> double scan_targets(const char* op, const Tensor& target, const CrossEntropyMath<T>& math) {
  const int64_t* t = target.data<int64_t>();
  double total = 0;
  for (int64_t i = 0; i < target.numel(); ++i) {
    DUET_CHECK(!math.bad(t[i]), op, ": target[", i, "] = ", t[i], " is out of range for ", math.classes,
               " classes (expected 0 <= target < ", math.classes, ", or ignore_index ", math.ignore_index, ")");
    total += static_cast<double>(math.row_weight(t[i]));
  }
  return total;
}

}  // namespace

void cross_entropy_forward(const Tensor& logits, const Tensor& target, const Tensor& weight,
                           const CrossEntropyTerms& terms, const Tensor& losses, const Tensor& log_probs,
                           const Tensor& total_weight) {
  const char* op = "cross_entropy_forward";
  const RowLayout l = RowLayout::of(logits, 1);
  dispatch_floating(logits.dtype(), op, [&]<class T>() {
    const CrossEntropyMath<T> math(data_or_null<T>(weight), l.size, terms);
    *total_weight.data<T>() = static_cast<T>(scan_targets(op, target, math));
    if (logits.numel() == 0) return;
    const T* x = logits.data<T>();
    T* lp = log_probs.data<T>();
    T* loss = losses.data<T>();
    const int64_t* t = target.data<int64_t>();
    parallel_for(l.rows(), grain_for(l.size), [&](int64_t begin, int64_t end) {
      if (l.inner == 1) log_softmax_rows(x, lp, begin, end, l.size);
      for (int64_t r = begin; r < end; ++r) {
        const int64_t o = l.offset(r);
        if (l.inner != 1) log_softmax_row(x + o, lp + o, l.size, l.inner);
        if (math.ignored(t[r])) {
          loss[r] = T(0);
          continue;
        }
        double smooth = 0;  // sum_c w[c] * -lp[c], only when smoothing
        if (math.smoothing) {
          for (int64_t c = 0; c < l.size; ++c) smooth -= double(math.class_weight(c)) * double(lp[o + c * l.inner]);
        }
        loss[r] = math.loss(t[r], -lp[o + t[r] * l.inner], static_cast<T>(smooth));
      }
    });
  });
}

void cross_entropy_backward(const Tensor& grad_losses, const Tensor& log_probs, const Tensor& target,
                            const Tensor& weight, const CrossEntropyTerms& terms, const Tensor& grad_logits) {
  const char* op = "cross_entropy_backward";
  const RowLayout l = RowLayout::of(log_probs, 1);
  dispatch_floating(log_probs.dtype(), op, [&]<class T>() {
    const CrossEntropyMath<T> math(data_or_null<T>(weight), l.size, terms);
    scan_targets(op, target, math);
    if (log_probs.numel() == 0) return;
    double weight_sum = static_cast<double>(math.unweighted_sum());
    if (weight.defined()) {
      weight_sum = 0;
      for (int64_t c = 0; c < l.size; ++c) weight_sum += static_cast<double>(math.class_weight(c));
    }
    const T* g = grad_losses.data<T>();
    const T* lp = log_probs.data<T>();
    T* gx = grad_logits.data<T>();
    const int64_t* t = target.data<int64_t>();
    // p = exp(lp) first, into gx, in one pass for [N, C] rows of f32 (as log_softmax_rows)
    const bool one_pass = std::is_same_v<T, float> && l.inner == 1;
    parallel_for(l.rows(), grain_for(l.size), [&](int64_t begin, int64_t end) {
      if constexpr (std::is_same_v<T, float>) {
        if (one_pass) exp_f32_all(lp + begin * l.size, gx + begin * l.size, (end - begin) * l.size);
      }
      for (int64_t r = begin; r < end; ++r) {
        const int64_t o = l.offset(r);
        if (math.ignored(t[r])) {
          for (int64_t j = 0; j < l.size; ++j) gx[o + j * l.inner] = T(0);
          continue;
        }
        const auto rg = math.row_grad(t[r], static_cast<T>(weight_sum));
        for (int64_t j = 0; j < l.size; ++j) {
          T& out = gx[o + j * l.inner];
          const T p = one_pass ? out : std::exp(lp[o + j * l.inner]);
          out = math.grad(g[r], p, j, t[r], rg);
        }
      }
    });
  });
}

}  // namespace duet::kernels::cpu
