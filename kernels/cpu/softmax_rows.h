// Softmax and log-softmax of one row, shared by the softmax kernels and cross-entropy.
//
// Rows are those of RowLayout (kernels/nn_layouts.h). The row maximum is subtracted before exp,
// so exp never overflows; sums are taken in double.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "duet/kernels/cpu/nn_common.h"
#include "duet/kernels/cpu/thread_pool.h"

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
