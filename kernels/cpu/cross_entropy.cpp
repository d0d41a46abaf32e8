// Fused cross-entropy on the CPU: a log-softmax per row (softmax_rows.h, or the exps of many f32
// rows at once) and the row's loss (kernels/cross_entropy_math.h); rows split over the pool. A
// row is the C class scores of one sample, or of one position of a [N, C, d1, ...] input, inner
// elements apart (RowLayout of dim 1).
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "duet/kernels/cpu/cpu_backend.h"
#include "duet/kernels/cpu/softmax_rows.h"
#include "duet/kernels/cross_entropy_math.h"
#include "duet/kernels/exp_f32.h"

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

// Rows of f32 classes laid out one after another ([N, C]): the exps of a chunk of rows are taken
// in one pass over all of its elements, which vectorises (exp_f32, within 2 ulp), where a row of
// 10 classes does not, and glibc's expf was called per element. With its log, that had been two
// thirds of mlp's cross-entropy: forward and backward on [256, 10] took 30 us a call, 19 this
// way (a throwaway program, 40,000 calls).
template <class T> bool exps_in_one_pass(const RowLayout& l) { return std::is_same_v<T, float> && l.inner == 1; }

void exp_f32_all(const float* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = exp_f32(in[i]);
}

// log_softmax_row for rows [begin, end) of contiguous rows of `size` classes, the exps of a group
// of rows (4096 values, or one row where that is longer) in one pass.
void log_softmax_rows_f32(const float* x, float* lp, int64_t begin, int64_t end, int64_t size) {
  const int64_t group = std::max<int64_t>(1, 4096 / size);
  thread_local std::vector<float> exps;
  exps.resize(static_cast<size_t>(std::min(group, end - begin) * size));
  for (int64_t r0 = begin; r0 < end; r0 += group) {
    const int64_t r1 = std::min(end, r0 + group);
    for (int64_t r = r0; r < r1; ++r) {
      const float m = row_max(x + r * size, size, int64_t{1});
      for (int64_t j = 0; j < size; ++j) lp[r * size + j] = x[r * size + j] - m;
    }
    exp_f32_all(lp + r0 * size, exps.data(), (r1 - r0) * size);
    for (int64_t r = r0; r < r1; ++r) {
      double sum = 0;
      for (int64_t j = 0; j < size; ++j) sum += exps[static_cast<size_t>((r - r0) * size + j)];
      const float log_sum = static_cast<float>(std::log(sum));
      for (int64_t j = 0; j < size; ++j) lp[r * size + j] -= log_sum;
    }
  }
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
    const bool one_pass = exps_in_one_pass<T>(l);
    parallel_for(l.rows(), grain_for(l.size), [&](int64_t begin, int64_t end) {
      if constexpr (std::is_same_v<T, float>) {
        if (one_pass) log_softmax_rows_f32(x, lp, begin, end, l.size);
      }
      for (int64_t r = begin; r < end; ++r) {
        const int64_t o = l.offset(r);
        if (!one_pass) log_softmax_row(x + o, lp + o, l.size, l.inner);
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
    const bool one_pass = exps_in_one_pass<T>(l);
    parallel_for(l.rows(), grain_for(l.size), [&](int64_t begin, int64_t end) {
      // p = exp(lp) first, into gx, where the rows allow one pass
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
