// The two generic kernels every elementwise launcher is built on (included by .cu files only).
//
//   launch_elementwise<N>(name, {&out, &in...}, op, stream): op(Offsets<N>) once per element of
//     out, with the offsets of every operand (broadcast and arbitrary strides).
//   launch_indexed(n, op, stream): op(i) for i in [0, n), for writers that depend on the index
//     (arange, Philox draws).
//
// Both use a grid-stride loop with 64-bit indices, so any size fits in a bounded grid.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>

#include "duet/kernels/cuda/check.h"
#include "duet/kernels/cuda/offset_calculator.h"

namespace duet::cuda {

inline constexpr int kThreadsPerBlock = 256;
inline constexpr int64_t kMaxBlocks = int64_t(1) << 16;  // the grid-stride loop covers the rest

inline unsigned blocks_for(int64_t n) {
  return static_cast<unsigned>(std::min((n + kThreadsPerBlock - 1) / kThreadsPerBlock, kMaxBlocks));
}

template <int N, class Op> __global__ void elementwise_kernel(int64_t n, OffsetCalculator<N> calc, Op op) {
  int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) op(calc.get(i));
}

template <class Op> __global__ void indexed_kernel(int64_t n, Op op) {
  int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) op(i);
}

template <int N, class Op> void launch_elementwise(const char* name, const std::array<const Tensor*, N>& operands,
                                                   const Op& op, cudaStream_t stream) {
  int64_t n = operands[0]->numel();
  if (n == 0) return;
  const ElementwiseLayout<N> layout = make_elementwise_layout<N>(operands, name);
  // More than kMaxElementwiseDims merged dims: one launch per index of the outer ones.
  const int64_t launches = layout.outer.count(), per_launch = n / launches;
  for (int64_t index = 0; index < launches; ++index) {
    OffsetCalculator<N> calc = layout.inner;
    layout.outer.offset(calc, index);
    elementwise_kernel<N><<<blocks_for(per_launch), kThreadsPerBlock, 0, stream>>>(per_launch, calc, op);
    DUET_CUDA_CHECK_LAUNCH();
  }
}

template <class Op> void launch_indexed(int64_t n, const Op& op, cudaStream_t stream) {
  if (n == 0) return;
  indexed_kernel<<<blocks_for(n), kThreadsPerBlock, 0, stream>>>(n, op);
  DUET_CUDA_CHECK_LAUNCH();
}

}  // namespace duet::cuda
