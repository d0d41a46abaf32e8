// Maps the linear index of an output element to the element offsets of every operand of an
// elementwise kernel. Built on the host from the tensors' sizes and strides, passed to the
// kernel by value, so any broadcast or strided layout works without copies.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>

#include "duet/core/error.h"
#include "duet/core/macros.h"
#include "duet/core/tensor.h"

namespace duet::cuda {

// Dimensions left after dropping size-1 dims and merging dims that are contiguous for every
// operand; a layout that needs more is rejected with an error.
inline constexpr int kMaxElementwiseDims = 8;

template <int N> struct Offsets { int64_t v[N]; };

template <int N> struct OffsetCalculator {
  int ndim = 0;
  int64_t sizes[kMaxElementwiseDims] = {};       // innermost dim first
  int64_t strides[kMaxElementwiseDims][N] = {};  // in elements, per operand

  DUET_HD Offsets<N> get(int64_t linear) const {
    Offsets<N> out;
    if (ndim == 1) {  // the common contiguous case: no division at all
      for (int k = 0; k < N; ++k) out.v[k] = linear * strides[0][k];
      return out;
    }
    for (int k = 0; k < N; ++k) out.v[k] = 0;
    for (int d = 0; d < kMaxElementwiseDims; ++d) {  // fixed bound, so the loop unrolls
      if (d == ndim) break;
      int64_t index = linear % sizes[d];
      linear /= sizes[d];
      for (int k = 0; k < N; ++k) out.v[k] += index * strides[d][k];
    }
    return out;
  }
};

// operands[0] is the output and defines the iteration shape; the others are broadcast to it
// (NumPy rules: a missing or size-1 dim gets stride 0). `op` names the caller in errors.
template <int N>
OffsetCalculator<N> make_offset_calculator(const std::array<const Tensor*, N>& operands, const char* op) {
  const Shape& shape = operands[0]->sizes();
  const int64_t rank = static_cast<int64_t>(shape.size());

  for (int k = 1; k < N; ++k) {
    const Tensor& t = *operands[k];
    bool fits = t.dim() <= rank;
    for (int64_t d = 0; fits && d < t.dim(); ++d) {
      int64_t size = t.sizes()[d], target = shape[d + (rank - t.dim())];
      fits = size == target || size == 1;
    }
    DUET_CHECK(fits, op, " on CUDA: operand ", t.describe(), " does not broadcast to ", shape_str(shape));
  }

  // Broadcast strides of the output's non-trivial dims (size-1 dims never move).
  DUET_CHECK(rank <= 64, op, " on CUDA: ", rank, " dims is too many");
  int64_t sizes[64];
  int64_t strides[64][N];
  int ndim = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (shape[d] == 1) continue;
    sizes[ndim] = shape[d];
    for (int k = 0; k < N; ++k) {
      const Tensor& t = *operands[k];
      int64_t td = d - (rank - t.dim());  // the operand's dim aligned to d from the right
      bool broadcast = td < 0 || t.sizes()[td] == 1;
      strides[ndim][k] = broadcast ? 0 : t.strides()[td];
    }
    ++ndim;
  }

  // Innermost first = smallest output stride first, so neighbouring threads write neighbouring
  // addresses even for a transposed output. Stable: a contiguous output keeps its order.
  int order[64];
  for (int d = 0; d < ndim; ++d) order[d] = ndim - 1 - d;
  std::stable_sort(order, order + ndim,
                   [&](int x, int y) { return std::abs(strides[x][0]) < std::abs(strides[y][0]); });

  // Merge an outer dim into the inner one where every operand steps through both as one.
  int64_t merged_sizes[64];
  int64_t merged_strides[64][N];
  int merged = 0;
  for (int i = 0; i < ndim; ++i) {
    int d = order[i];
    bool joins = merged > 0;
    for (int k = 0; k < N && joins; ++k)
      joins = strides[d][k] == merged_strides[merged - 1][k] * merged_sizes[merged - 1];
    if (joins) {
      merged_sizes[merged - 1] *= sizes[d];
      continue;
    }
    merged_sizes[merged] = sizes[d];
    for (int k = 0; k < N; ++k) merged_strides[merged][k] = strides[d][k];
    ++merged;
  }
  DUET_CHECK(merged <= kMaxElementwiseDims, op, " on CUDA: the layout of ", operands[0]->describe(), " needs ", merged,
             " dims after merging, at most ", kMaxElementwiseDims, " are supported");

  OffsetCalculator<N> calc;
  calc.ndim = merged;
  for (int d = 0; d < merged; ++d) {
    calc.sizes[d] = merged_sizes[d];
    for (int k = 0; k < N; ++k) calc.strides[d][k] = merged_strides[d][k];
  }
  return calc;
}

}  // namespace duet::cuda
