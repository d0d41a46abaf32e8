// Softmax and log-softmax of one row, shared by the softmax kernels and cross-entropy.
//
// Rows are those of RowLayout (kernels/nn_layouts.h). The row maximum is subtracted before exp,
// so exp never overflows; sums are taken in double.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "duet/kernels/cpu/nn_common.h"
#include "duet/kernels/cpu/thread_pool.h"
#include "duet/kernels/exp_f32.h"

namespace duet::kernels::cpu {

// Runs fn(offset) for the first element of every row, rows split over the pool.
template <class Fn> void for_each_row(const RowLayout& l, Fn&& fn) {
  parallel_for(l.rows(), grain_for(l.size), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) fn(l.offset(r));
  });
}

template <class T> T row_max(const T* x, int64_t n, int64_t stride) {
  T m = x[0];
  for (int64_t j = 1; j < n; ++j) m = std::max(m, x[j * stride]);
  return m;
}

// y = x - logsumexp(x) over the row; y may alias x.
template <class T> void log_softmax_row(const T* x, T* y, int64_t n, int64_t stride) {
  const T m = row_max(x, n, stride);
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += std::exp(x[j * stride] - m);
  // (x - m) is exact for the largest elements; folding m into the log term would round it.
  const T log_sum = static_cast<T>(std::log(sum));
  for (int64_t j = 0; j < n; ++j) y[j * stride] = (x[j * stride] - m) - log_sum;
}

// out[i] = exp_f32(in[i]) for i < n: one loop that vectorises (within 2 ulp of exp).
inline void exp_f32_all(const float* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = exp_f32(in[i]);
}

// log_softmax_row for rows [begin, end) of rows of `size` elements laid out one after another
// (inner 1); y may alias x. In f32 the exps of a group of rows (4096 values, or one longer row)
// are taken in one vectorised pass, where a short row (mlp's 10 classes) does not vectorise and
// glibc's expf, called per element, takes with its log most of cross-entropy's time
// (docs/performance.md). The values move within 2 ulp of log_softmax_row's.
template <class T> void log_softmax_rows(const T* x, T* y, int64_t begin, int64_t end, int64_t size) {
  if constexpr (!std::is_same_v<T, float>) {
    for (int64_t r = begin; r < end; ++r) log_softmax_row(x + r * size, y + r * size, size, int64_t{1});
  } else {
    const int64_t group = std::max<int64_t>(1, 4096 / size);
    thread_local std::vector<float> exps;
    exps.resize(static_cast<size_t>(std::min(group, end - begin) * size));
    for (int64_t r0 = begin; r0 < end; r0 += group) {
      const int64_t r1 = std::min(end, r0 + group);
      for (int64_t r = r0; r < r1; ++r) {
        const float m = row_max(x + r * size, size, int64_t{1});
        for (int64_t j = 0; j < size; ++j) y[r * size + j] = x[r * size + j] - m;
      }
      exp_f32_all(y + r0 * size, exps.data(), (r1 - r0) * size);
      for (int64_t r = r0; r < r1; ++r) {
        double sum = 0;
        for (int64_t j = 0; j < size; ++j) sum += exps[static_cast<size_t>((r - r0) * size + j)];
        const float log_sum = static_cast<float>(std::log(sum));
        for (int64_t j = 0; j < size; ++j) y[r * size + j] -= log_sum;
      }
    }
  }
}

// y = exp(x - max) / sum(exp(x - max)) over the row; y may alias x.
template <class T> void softmax_row(const T* x, T* y, int64_t n, int64_t stride) {
  const T m = row_max(x, n, stride);
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    const T e = std::exp(x[j * stride] - m);
    y[j * stride] = e;
    sum += e;
  }
  const T scale = static_cast<T>(1 / sum);
  for (int64_t j = 0; j < n; ++j) y[j * stride] *= scale;
}

}  // namespace duet::kernels::cpu
