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

namespace duet::cuda {

// The largest block the reductions use; block sizes are powers of two from 32 up to this.
inline constexpr int kMaxReduceThreads = 256;

// The block size for reducing `n` elements per block: the power of two covering n, within
// [32, kMaxReduceThreads], so small rows do not leave most of a block idle.
inline int reduce_threads_for(int64_t n) {
  int threads = 32;
  while (threads < kMaxReduceThreads && threads < n) threads *= 2;
  return threads;
}

// How many blocks share the elements of one output (a reduction's row, a batch norm channel),
// each taking one slice and the slices' partial results then combined in slice order: with few
// outputs, enough to put about 1024 blocks in flight, each with at least 4096 elements; else 1.
inline int64_t parts_per_output(int64_t outputs, int64_t count) {
  constexpr int64_t kTargetBlocks = 1024, kMinElementsPerPart = 4096;
  if (outputs <= 0 || outputs >= kTargetBlocks || count < 2 * kMinElementsPerPart) return 1;
  return std::min((kTargetBlocks + outputs - 1) / outputs, count / kMinElementsPerPart);
}

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
