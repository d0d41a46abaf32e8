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

// Dimensions one kernel launch handles, after dropping size-1 dims and merging dims that are
// contiguous for every operand. An elementwise layout that needs more (rare: a view permuted and
// sliced in many dims) is launched once per index of its outer dims (make_elementwise_layout);
// the reductions, which cannot split a reduced range across launches, reduce a packed copy
// (reduce.cu).
inline constexpr int kMaxElementwiseDims = 8;
inline constexpr int kMaxDims = 64;

template <int N> struct Offsets { int64_t v[N]; };

template <int N> struct OffsetCalculator {
  int ndim = 0;
  int64_t sizes[kMaxElementwiseDims] = {};       // innermost dim first
  int64_t strides[kMaxElementwiseDims][N] = {};  // in elements, per operand
  int64_t base[N] = {};                          // added to every offset: where this launch starts

  DUET_HD Offsets<N> get(int64_t linear) const {
    Offsets<N> out;
    if (ndim == 1) {  // the common contiguous case: no division at all
      for (int k = 0; k < N; ++k) out.v[k] = base[k] + linear * strides[0][k];
      return out;
    }
    for (int k = 0; k < N; ++k) out.v[k] = base[k];
    for (int d = 0; d < kMaxElementwiseDims; ++d) {  // fixed bound, so the loop unrolls
      if (d == ndim) break;
      int64_t index = linear % sizes[d];
      linear /= sizes[d];
      for (int k = 0; k < N; ++k) out.v[k] += index * strides[d][k];
    }
    return out;
  }
};

// The merged dims beyond the innermost kMaxElementwiseDims, innermost first.
template <int N> struct OuterDims {
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims][N] = {};

  int64_t count() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= sizes[d];
    return n;
  }
  // Adds the operands' offsets of outer index `index` (in [0, count())) to `calc`'s base.
  template <class Calc> void offset(Calc& calc, int64_t index) const {
    for (int d = 0; d < ndim; ++d) {
      const int64_t i = index % sizes[d];
      index /= sizes[d];
      for (int k = 0; k < N; ++k) calc.base[k] += i * strides[d][k];
    }
  }
};

template <int N> struct ElementwiseLayout {
  OffsetCalculator<N> inner;  // one launch's dims
  OuterDims<N> outer;         // looped over on the host
};

// operands[0] is the output and defines the iteration shape; the others are broadcast to it
// (NumPy rules: a missing or size-1 dim gets stride 0). `op` names the caller in errors.
template <int N>
ElementwiseLayout<N> make_elementwise_layout(const std::array<const Tensor*, N>& operands, const char* op) {
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
  DUET_CHECK(rank <= kMaxDims, op, " on CUDA: ", rank, " dims is too many");
  int64_t sizes[kMaxDims];
  int64_t strides[kMaxDims][N];
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
  int order[kMaxDims];
  for (int d = 0; d < ndim; ++d) order[d] = ndim - 1 - d;
  std::stable_sort(order, order + ndim,
                   [&](int x, int y) { return std::abs(strides[x][0]) < std::abs(strides[y][0]); });

  // Merge an outer dim into the inner one where every operand steps through both as one.
  int64_t merged_sizes[kMaxDims];
  int64_t merged_strides[kMaxDims][N];
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
  ElementwiseLayout<N> layout;
  layout.inner.ndim = std::min(merged, kMaxElementwiseDims);
  for (int d = 0; d < layout.inner.ndim; ++d) {
    layout.inner.sizes[d] = merged_sizes[d];
    for (int k = 0; k < N; ++k) layout.inner.strides[d][k] = merged_strides[d][k];
  }
  layout.outer.ndim = merged - layout.inner.ndim;
  for (int d = 0; d < layout.outer.ndim; ++d) {
    layout.outer.sizes[d] = merged_sizes[layout.inner.ndim + d];
    for (int k = 0; k < N; ++k) layout.outer.strides[d][k] = merged_strides[layout.inner.ndim + d][k];
  }
  return layout;
}

}  // namespace duet::cuda
