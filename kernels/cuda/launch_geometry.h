// How many blocks and threads the CUDA reductions launch, decided from the sizes alone: plain C++
// with no CUDA header, so that the CPU tests check the geometry
// (tests/cpu/test_cuda_launch_geometry.cpp). A kernel's tests on a GPU compare results, which one
// block gives as well as many; whether the work is really spread is a property of these numbers.
#pragma once

#include <algorithm>
#include <cstdint>

#include "duet/core/macros.h"

namespace duet::cuda {

// The largest block the reductions use; block sizes are powers of two from 32 up to this.
inline constexpr int kMaxReduceThreads = 256;

// The block size for reducing `n` elements per block: the power of two covering n, within
// [32, kMaxReduceThreads], so small rows do not leave most of a block idle.
constexpr int reduce_threads_for(int64_t n) {
  int threads = 32;
  while (threads < kMaxReduceThreads && threads < n) threads *= 2;
  return threads;
}

// How many blocks share the elements of one output (a reduction's row, a batch norm channel),
// each taking one slice and the slices' partial results then combined in slice order: with few
// outputs, enough to put about 1024 blocks in flight, each with at least 4096 elements; else 1.
constexpr int64_t parts_per_output(int64_t outputs, int64_t count) {
  constexpr int64_t kTargetBlocks = 1024, kMinElementsPerPart = 4096;
  if (outputs <= 0 || outputs >= kTargetBlocks || count < 2 * kMinElementsPerPart) return 1;
  return std::min((kTargetBlocks + outputs - 1) / outputs, count / kMinElementsPerPart);
}

// Where slice `part` of `parts` of an output's `count` elements begins; it ends where part + 1
// begins. The slices cover [0, count) in order, their sizes differing by at most one.
DUET_HD constexpr int64_t slice_begin(int64_t count, int64_t parts, int64_t part) { return count * part / parts; }

// The blocks (of kMaxReduceThreads threads, striding over the grid) that check cross-entropy's
// `n` targets: enough to fill the GPU for a large batch, one for a small one. A fixed count for a
// given n, so the order of the weights' sum, and with it the result, is the same run after run.
constexpr int target_check_blocks(int64_t n) {
  constexpr int64_t kMaxBlocks = 256;
  return static_cast<int>(std::clamp<int64_t>((n + kMaxReduceThreads - 1) / kMaxReduceThreads, 1, kMaxBlocks));
}

}  // namespace duet::cuda
