// A deterministic reduction across the threads of one block (included by .cu files only).
//
// Every thread contributes one value; the values are combined pairwise in a fixed tree
// (thread t with t + s, s halving), so the result depends only on the block size and the
// values, never on scheduling: the reason duet's CUDA reductions use no floating-point atomics.
// Shared memory rather than warp shuffles, so any trivially copyable accumulator (a value and its
// index, a running max and sum) goes through the same code.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "duet/kernels/cuda/launch_geometry.h"  // kMaxReduceThreads, the block and slice counts

namespace duet::cuda {

// -infinity as a constant that device code may read (numeric_limits is host-only code).
template <class T> inline constexpr T kNegInfinity = -std::numeric_limits<T>::infinity();

template <class T> struct alignas(T) RawSlot { unsigned char bytes[sizeof(T)]; };

// Combines `value` of every thread of the block (blockDim.x a power of two <= kMaxReduceThreads)
// and returns the total to every thread. All threads of the block must call it.
template <class T, class Combine> __device__ T block_reduce(T value, Combine combine) {
  __shared__ RawSlot<T> slots[kMaxReduceThreads];
  T* shared = reinterpret_cast<T*>(slots);
  const unsigned tid = threadIdx.x;
  shared[tid] = value;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (tid < s) shared[tid] = combine(shared[tid], shared[tid + s]);
    __syncthreads();
  }
  T total = shared[0];
  __syncthreads();  // the slots are free again for the caller's next block_reduce
  return total;
}

template <class T> struct SumOf {
  __device__ T operator()(T a, T b) const { return a + b; }
};

template <class T> struct MaxOf {
  __device__ T operator()(T a, T b) const { return a < b ? b : a; }
};

}  // namespace duet::cuda
