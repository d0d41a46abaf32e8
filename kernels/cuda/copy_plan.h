// How a same-device copy of one dense block is done, decided from the two byte ranges alone:
// plain C++ with no CUDA header, so that the CPU tests cover it (tests/cpu/test_copy_plan.cpp).
// The CPU copies a dense block with memmove, so a copy between partially overlapping views of
// one buffer (x[1:] = x[:-1]) reads every source byte before it is overwritten. cudaMemcpyAsync
// promises that only for disjoint ranges, so an overlapping copy goes through a scratch buffer.
#pragma once

#include <cstddef>
#include <cstdint>

namespace duet::cuda {

enum class DenseCopy {
  none,    // nothing to do: no bytes, or the source is the destination
  direct,  // disjoint ranges: one cudaMemcpyAsync
  staged,  // partially overlapping ranges: source to scratch, then scratch to destination
};

constexpr DenseCopy plan_dense_copy(std::uintptr_t dst, std::uintptr_t src, std::size_t bytes) {
  if (bytes == 0 || dst == src) return DenseCopy::none;
  const bool disjoint = dst + bytes <= src || src + bytes <= dst;
  return disjoint ? DenseCopy::direct : DenseCopy::staged;
}

}  // namespace duet::cuda
