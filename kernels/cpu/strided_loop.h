// The one elementwise iteration helper of the CPU kernels.
//
// An elementwise kernel sees N operands (operand 0 is the output) laid over the output's
// shape: each input's strides are broadcast to that shape (stride 0 on broadcast dims, sizes
// right-aligned NumPy-style). The loop drops size-1 dims, orders dims by the output's strides
// (so a transposed output is written in memory order), merges dims that are contiguous for
// every operand, then calls an inner function once per run of the last dim. Large loops are
// split over the thread pool by linear element index, so even a single long row is shared.
// An input read across its rows (a transpose) is walked in square tiles instead.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <tuple>
#include <utility>

#include "duet/core/error.h"
#include "duet/core/tensor.h"
#include "duet/kernels/cpu/thread_pool.h"

namespace duet::kernels::cpu {

// Elements per parallel chunk: below this, threading costs more than it saves.
inline constexpr int64_t kElementwiseGrain = 32768;

// `t`'s strides, in bytes, broadcast to `sizes`; throws naming `op` when t does not broadcast.
Shape broadcast_byte_strides(const Tensor& t, const Shape& sizes, const char* op);

// The iteration space after coalescing: dims outermost first, the last one is the inner run.
template <size_t N> struct StridedLayout {
  Shape sizes;
  std::array<Shape, N> strides;  // in bytes, per operand
};

template <size_t N> StridedLayout<N> coalesce(const Shape& sizes, const std::array<Shape, N>& strides) {
  std::vector<size_t> dims;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] != 1) dims.push_back(d);
  // Outermost = largest output stride; stable, so a contiguous output keeps its order.
  std::stable_sort(dims.begin(), dims.end(),
                   [&](size_t x, size_t y) { return std::abs(strides[0][x]) > std::abs(strides[0][y]); });
  StridedLayout<N> out;
  for (size_t d : dims) {
    bool merges = !out.sizes.empty();
    for (size_t k = 0; k < N && merges; ++k) merges = out.strides[k].back() == strides[k][d] * sizes[d];
    if (merges) {
      out.sizes.back() *= sizes[d];
      for (size_t k = 0; k < N; ++k) out.strides[k].back() = strides[k][d];
    } else {
      out.sizes.push_back(sizes[d]);
      for (size_t k = 0; k < N; ++k) out.strides[k].push_back(strides[k][d]);
    }
  }
  if (out.sizes.empty()) {  // a single element
    out.sizes.push_back(1);
    for (size_t k = 0; k < N; ++k) out.strides[k].push_back(0);
  }
  return out;
}

// Calls inner(ptrs, inner_strides, n) for the runs covering linear elements [begin, end).
template <size_t N, class Inner> void for_each_run(const StridedLayout<N>& layout, const std::array<char*, N>& base,
                                                   int64_t begin, int64_t end, Inner& inner) {
  const size_t nd = layout.sizes.size();
  const int64_t row = layout.sizes[nd - 1];
  std::array<int64_t, N> step;
  for (size_t k = 0; k < N; ++k) step[k] = layout.strides[k][nd - 1];
  Shape index(nd);
  std::array<char*, N> ptr = base;
  for (int64_t rest = begin, d = static_cast<int64_t>(nd) - 1; d >= 0; --d) {
    index[d] = rest % layout.sizes[d];
    rest /= layout.sizes[d];
    for (size_t k = 0; k < N; ++k) ptr[k] += index[d] * layout.strides[k][d];
  }
  for (int64_t pos = begin; pos < end;) {
    int64_t n = std::min(row - index[nd - 1], end - pos);
    inner(ptr, step, n);
    pos += n;
    index[nd - 1] += n;
    for (size_t k = 0; k < N; ++k) ptr[k] += n * step[k];
    for (size_t d = nd - 1; d > 0 && index[d] == layout.sizes[d]; --d) {  // carry
      index[d] = 0;
      ++index[d - 1];
      for (size_t k = 0; k < N; ++k) ptr[k] += layout.strides[k][d - 1] - layout.sizes[d] * layout.strides[k][d];
    }
  }
}

// Side of the square tiles used when an input is read across its rows (a transpose).
inline constexpr int64_t kTile = 32;

// True when some input walks the inner dim with a stride of a cache line or more but is
// denser along the next dim out: reading it row by row would miss the cache on every element.
template <size_t N> bool wants_tiles(const StridedLayout<N>& layout) {
  const size_t nd = layout.sizes.size();
  if (nd < 2 || layout.sizes[nd - 1] < kTile || layout.sizes[nd - 2] < kTile) return false;
  for (size_t k = 1; k < N; ++k) {
    int64_t inner = std::abs(layout.strides[k][nd - 1]), next = std::abs(layout.strides[k][nd - 2]);
    if (inner >= 64 && next != 0 && next < inner) return true;
  }
  return false;
}

// The loop over the two inner dims in kTile x kTile tiles, so each cache line of the
// transposed input is used kTile times while it is in cache.
template <size_t N, class Inner>
void tiled_loop(const StridedLayout<N>& layout, const std::array<char*, N>& base, Inner& inner) {
  const size_t nd = layout.sizes.size();
  const int64_t rows = layout.sizes[nd - 2], cols = layout.sizes[nd - 1];
  const int64_t row_tiles = (rows + kTile - 1) / kTile, col_tiles = (cols + kTile - 1) / kTile;
  const int64_t outer = numel(layout.sizes) / (rows * cols);
  std::array<int64_t, N> row_step, col_step;
  for (size_t k = 0; k < N; ++k) {
    row_step[k] = layout.strides[k][nd - 2];
    col_step[k] = layout.strides[k][nd - 1];
  }
  parallel_for(outer * row_tiles * col_tiles, kElementwiseGrain / (kTile * kTile), [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      int64_t tile = task % (row_tiles * col_tiles), rest = task / (row_tiles * col_tiles);
      std::array<char*, N> ptr = base;
      for (size_t d = nd - 2; d-- > 0;) {  // the outer dims of this task
        int64_t index = rest % layout.sizes[d];
        rest /= layout.sizes[d];
        for (size_t k = 0; k < N; ++k) ptr[k] += index * layout.strides[k][d];
      }
      const int64_t r0 = (tile / col_tiles) * kTile, c0 = (tile % col_tiles) * kTile;
      const int64_t width = std::min(kTile, cols - c0);
      for (int64_t r = r0; r < std::min(rows, r0 + kTile); ++r) {
        std::array<char*, N> row_ptr;
        for (size_t k = 0; k < N; ++k) row_ptr[k] = ptr[k] + r * row_step[k] + c0 * col_step[k];
        inner(row_ptr, col_step, width);
      }
    }
  });
}

// Runs inner over every element of `sizes`, in parallel when it is large.
template <size_t N, class Inner> void strided_loop(const Shape& sizes, const std::array<char*, N>& base,
                                                   const std::array<Shape, N>& byte_strides, Inner&& inner) {
  int64_t total = numel(sizes);
  if (total == 0) return;
  StridedLayout<N> layout = coalesce(sizes, byte_strides);
  if (wants_tiles(layout)) {
    tiled_loop(layout, base, inner);
    return;
  }
  parallel_for(total, kElementwiseGrain,
               [&](int64_t begin, int64_t end) { for_each_run(layout, base, begin, end, inner); });
}

namespace detail {

// An input of a dense run: an array, or (kScalar) one value broadcast along the run, loaded
// once so the compiler knows it cannot change while the output is written.
template <class T, bool kScalar> struct RunInput {
  const T* data;
  T value;
  explicit RunInput(const char* p) : data(reinterpret_cast<const T*>(p)), value(*data) {}
  T operator[](int64_t i) const {
    if constexpr (kScalar) return value;
    else return data[i];
  }
};

// Dense output; input I is a broadcast scalar when bit I of kScalarMask is set.
template <unsigned kScalarMask, class OutT, class... InT, class F, size_t... I>
inline void dense_run(F& f, const std::array<char*, sizeof...(InT) + 1>& p, int64_t n, std::index_sequence<I...>) {
  OutT* out = reinterpret_cast<OutT*>(p[0]);
  std::tuple<RunInput<InT, ((kScalarMask >> I) & 1u) != 0>...> in{
      RunInput<InT, ((kScalarMask >> I) & 1u) != 0>(p[I + 1])...};
  for (int64_t i = 0; i < n; ++i) out[i] = f(std::get<I>(in)[i]...);
}

// Runs with one or two inputs get a vectorisable loop for every dense/scalar mix (x * scalar
// is common); with more inputs only the all-dense loop is generated, to bound code size.
template <size_t K> inline constexpr unsigned kScalarMasks = K <= 2 ? (1u << K) : 1u;

// One run of out[i] = f(in[i]...): a straight loop the compiler vectorises when the output is
// dense and each input dense or a broadcast scalar, a strided loop otherwise.
template <class OutT, class... InT, class F, size_t... I>
inline void map_run(F& f, const std::array<char*, sizeof...(InT) + 1>& p,
                    const std::array<int64_t, sizeof...(InT) + 1>& s, int64_t n, std::index_sequence<I...> seq) {
  constexpr size_t K = sizeof...(InT);
  bool dense_or_scalar =
      s[0] == sizeof(OutT) && ((s[I + 1] == static_cast<int64_t>(sizeof(InT)) || s[I + 1] == 0) && ...);
  unsigned mask = ((s[I + 1] == 0 ? 1u << I : 0u) | ... | 0u);
  if (dense_or_scalar && n > 1 && mask < kScalarMasks<K>) {
    [&]<unsigned... M>(std::integer_sequence<unsigned, M...>) {
      ((mask == M ? dense_run<M, OutT, InT...>(f, p, n, seq) : void()), ...);
    }
    (std::make_integer_sequence<unsigned, kScalarMasks<K>>{});
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    *reinterpret_cast<OutT*>(p[0] + i * s[0]) = f(*reinterpret_cast<const InT*>(p[I + 1] + i * s[I + 1])...);
}

}  // namespace detail

// out = f(inputs...) elementwise, the inputs broadcast to out.sizes(). OutT and InT... are the
// operands' C++ types; a dtype mismatch throws naming `op`.
template <class OutT, class... InT, class F, class... Tensors>
void map_elementwise(const char* op, F f, const Tensor& out, const Tensors&... inputs) {
  static_assert(sizeof...(InT) == sizeof...(Tensors), "one C++ type per input tensor");
  constexpr size_t N = sizeof...(InT) + 1;
  DUET_CHECK(out.dtype() == dtype_of<OutT>(), op, ": expected output dtype ", dtype_name(dtype_of<OutT>()), ", got ",
             out.describe());
  DUET_CHECK(((inputs.dtype() == dtype_of<InT>()) && ...), op, ": expected input dtypes (",
             (std::string() + ... + (std::string(dtype_name(dtype_of<InT>())) + " ")), "), got (",
             (std::string() + ... + (inputs.describe() + ", ")), ") for output ", out.describe());
  std::array<char*, N> base{static_cast<char*>(out.data_ptr()), static_cast<char*>(inputs.data_ptr())...};
  std::array<Shape, N> strides{broadcast_byte_strides(out, out.sizes(), op),
                               broadcast_byte_strides(inputs, out.sizes(), op)...};
  strided_loop(out.sizes(), base, strides,
               [&](const std::array<char*, N>& p, const std::array<int64_t, N>& s, int64_t n) {
                 detail::map_run<OutT, InT...>(f, p, s, n, std::index_sequence_for<InT...>{});
               });
}

}  // namespace duet::kernels::cpu
