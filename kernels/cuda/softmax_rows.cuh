// Softmax and log-softmax of one row by one block, shared by softmax.cu and cross_entropy.cu
// (included by .cu files only). The formulas are the CPU's (kernels/cpu/softmax_rows.h): the row
// maximum is subtracted before exp, exp runs in T, sums are taken in double. The values agree to
// a few ulp, not bit for bit: exp and log are the device's (the CPU's f32 exp is exp_f32), and
// the sums go in another order.
//
// Rows are those of RowLayout (kernels/nn_layouts.h), as on the CPU.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "duet/core/tensor.h"
#include "duet/kernels/cuda/block_reduce.cuh"
#include "duet/kernels/cuda/check.h"
#include "duet/kernels/nn_layouts.h"

namespace duet::cuda {

using kernels::RowLayout;

// The statistics of one row that both outputs are computed from.
template <class T> struct RowStats {
  T max;
  double sum_exp;  // sum of exp(x - max)
};

// Every thread of the block must call it; every thread gets the same answer.
template <class T> __device__ RowStats<T> row_stats(const T* x, int64_t n, int64_t stride) {
  T m = kNegInfinity<T>;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) m = MaxOf<T>{}(m, x[j * stride]);
  m = block_reduce(m, MaxOf<T>{});
  double sum = 0;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) sum += std::exp(x[j * stride] - m);
  sum = block_reduce(sum, SumOf<double>{});
  return {m, sum};
}

// y = (x - max) - log(sum): (x - max) is exact for the largest elements; folding max into the
// log term would round it.
template <class T> __device__ T log_softmax_value(T x, const RowStats<T>& s) {
  return (x - s.max) - static_cast<T>(std::log(s.sum_exp));
}

// One block per row, grid-stride over the rows; fn(row) (a functor with a __device__
// operator()) runs on every thread of the block.
template <class Fn> __global__ void per_row_kernel(int64_t rows, Fn fn) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) fn(row);
}

template <class Fn> void launch_per_row(int64_t rows, int64_t row_size, Fn fn, cudaStream_t stream) {
  if (rows == 0) return;
  const auto blocks = static_cast<unsigned>(std::min<int64_t>(rows, int64_t(1) << 16));
  per_row_kernel<<<blocks, reduce_threads_for(row_size), 0, stream>>>(rows, fn);
  DUET_CUDA_CHECK_LAUNCH();
}

}  // namespace duet::cuda
