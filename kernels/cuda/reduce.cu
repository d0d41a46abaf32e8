// Reductions (sum, mean, max, min, argmax, argmin, logsumexp) over chosen dims, keepdim layout, on CUDA.
//
// One block reduces one output, or one of `parts` equal slices of it when there are too few
// outputs to fill the GPU; the slices' accumulators then go to a scratch buffer and a second
// kernel merges them in slice order. Inside a block each thread folds a strided subset of the
// elements and block_reduce combines the threads in a fixed tree. No atomics, so the result
// depends only on the shapes. Sums of f32 accumulate in double and integer sums in i64, as on
// the CPU (kernels/cpu/reduce.cpp), whose accumulator semantics these mirror (NaN wins max,
// min, argmax and argmin; argmax and argmin return the first extremum).
//
// Strided input and output: the kept dims and the reduced dims each get an OffsetCalculator
// (offset_calculator.h), so any layout of up to kMaxElementwiseDims merged dims each is read in
// place; one that needs more is packed first (launch_reduce).
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>

#include "duet/kernels/cast.h"
#include "duet/kernels/cuda/block_reduce.cuh"
#include "duet/kernels/cuda/elementwise.cuh"
#include "duet/kernels/cuda/launchers.h"

namespace duet::cuda {
namespace {

using kernels::ReduceOp;

template <class T> __device__ bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  else return false;
}

template <class T> using SumType = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
// A sum's output: the input's floating dtype, or i64 for integers (as torch.sum).
template <class T> using SumOutput = std::conditional_t<std::is_floating_point_v<T>, T, int64_t>;

// Accumulators: add(v, index) folds in one element (index: its position along the reduced
// dims), merge(other) another accumulator, result(count) gives the output value. Each starts as
// the identity of its merge.
template <class T> struct SumAcc {
  SumType<T> sum = 0;
  __device__ void add(T v, int64_t) { sum += v; }
  __device__ void merge(const SumAcc& o) { sum += o.sum; }
  __device__ SumType<T> result(int64_t) const { return sum; }
};

template <class T> struct MeanAcc : SumAcc<T> {
  __device__ void merge(const MeanAcc& o) { this->sum += o.sum; }
  __device__ double result(int64_t count) const { return static_cast<double>(this->sum) / static_cast<double>(count); }
};

// The identity of max (kMax) or min: an infinity for floating types, so an all -inf input
// gives -inf, else the type's extreme. (A constant: numeric_limits is host-only code.)
template <class T, bool kMax>
inline constexpr T kExtremumIdentity = std::is_floating_point_v<T>
                                           ? (kMax ? -std::numeric_limits<T>::infinity()
                                                   : std::numeric_limits<T>::infinity())
                                           : (kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max());

template <class T, bool kMax> struct ExtremumAcc {
  T best = kExtremumIdentity<T, kMax>;
  __device__ void add(T v, int64_t) {
    if ((kMax ? v > best : v < best) || is_nan(v)) best = v;
  }
  __device__ void merge(const ExtremumAcc& o) { add(o.best, 0); }
  __device__ T result(int64_t) const { return best; }
};

// The first index of the maximum (kMax) or minimum, NaN counting as either. merge() may see its
// operands in any index order (the tree pairs threads, not ranges), so ties go to the smaller index.
template <class T, bool kMax> struct ArgExtremumAcc {
  T best{};
  int64_t index = -1;
  __device__ void add(T v, int64_t i) { merge(ArgExtremumAcc{v, i}); }
  __device__ void merge(const ArgExtremumAcc& o) {
    if (o.index < 0) return;
    if (index < 0 || takes_over(o)) *this = o;
  }
  __device__ bool takes_over(const ArgExtremumAcc& o) const {
    const bool mine_nan = is_nan(best), theirs_nan = is_nan(o.best);
    if (mine_nan || theirs_nan) return theirs_nan && (!mine_nan || o.index < index);
    return (kMax ? o.best > best : o.best < best) || (o.best == best && o.index < index);
  }
  __device__ int64_t result(int64_t) const { return index; }
};

// Online log-sum-exp: the running maximum and sum(exp(x - max)), so it never overflows.
template <class T> struct LogSumExpAcc {
  using A = SumType<T>;
  A max = kNegInfinity<A>, sum = 0;
  __device__ void combine(A m, A s) {
    // Skip an empty or all -inf range, but not one that saw a NaN (max -inf, sum NaN): the tree
    // merges such a thread's accumulator into another one, which must turn NaN as on the CPU.
    if (m == kNegInfinity<A> && !std::isnan(s)) return;
    if (m > max) {
      sum = sum * std::exp(max - m) + s;
      max = m;
    } else {
      sum += m == max ? s : s * std::exp(m - max);  // equal: keeps inf - inf out
    }
  }
  __device__ void add(T v, int64_t) { combine(static_cast<A>(v), 1); }
  __device__ void merge(const LogSumExpAcc& o) { combine(o.max, o.sum); }
  // As the CPU's: a NaN sum wins over an infinite max.
  __device__ A result(int64_t) const { return std::isinf(max) && !std::isnan(sum) ? max : max + std::log(sum); }
};

template <class Acc> struct MergeAcc {
  __device__ Acc operator()(Acc a, const Acc& b) const {
    a.merge(b);
    return a;
  }
};

// Where the elements of one reduction live: kept maps an output index to {out offset, in
// offset of its first element}, reduced maps an element index to its offset from there.
struct ReduceIndexing {
  OffsetCalculator<2> kept;
  OffsetCalculator<1> reduced;
  int64_t outputs, count, parts;
};

// Block `task` reduces part (task % parts) of output (task / parts). With one part it writes
// the output, else its accumulator to partials[task].
template <class T, class O, class Acc>
__global__ void reduce_kernel(const T* in, O* out, Acc* partials, ReduceIndexing ix) {
  const int64_t tasks = ix.outputs * ix.parts;
  for (int64_t task = blockIdx.x; task < tasks; task += gridDim.x) {
    const int64_t output = task / ix.parts, part = task % ix.parts;
    const Offsets<2> base = ix.kept.get(output);
    const int64_t begin = slice_begin(ix.count, ix.parts, part), end = slice_begin(ix.count, ix.parts, part + 1);
    Acc acc;
    for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) acc.add(in[base.v[1] + ix.reduced.get(i).v[0]], i);
    acc = block_reduce(acc, MergeAcc<Acc>{});
    if (threadIdx.x == 0) {
      if (ix.parts == 1) out[base.v[0]] = kernels::cast_value<O>(acc.result(ix.count));
      else partials[task] = acc;
    }
  }
}

// One thread per output: the parts' accumulators merged in part order.
template <class O, class Acc> __global__ void merge_parts_kernel(const Acc* partials, O* out, ReduceIndexing ix) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t output = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; output < ix.outputs;
       output += step) {
    Acc total = partials[output * ix.parts];
    for (int64_t part = 1; part < ix.parts; ++part) total.merge(partials[output * ix.parts + part]);
    out[ix.kept.get(output).v[0]] = kernels::cast_value<O>(total.result(ix.count));
  }
}

template <class T, class O, class Acc>
void run_reduce(const Tensor& in, const Tensor& out, const ReduceIndexing& ix, cudaStream_t stream) {
  const T* in_data = in.data<T>();
  O* out_data = out.data<O>();
  const int threads = reduce_threads_for((ix.count + ix.parts - 1) / ix.parts);
  const auto blocks = static_cast<unsigned>(std::min<int64_t>(ix.outputs * ix.parts, kMaxBlocks));
  if (ix.parts == 1) {
    reduce_kernel<T, O, Acc><<<blocks, threads, 0, stream>>>(in_data, out_data, nullptr, ix);
    DUET_CUDA_CHECK_LAUNCH();
    return;
  }
  // Freed when this returns: the caching allocator reuses it only on this same stream, after
  // the merge below.
  Tensor scratch =
      empty_contiguous({ix.outputs * ix.parts * static_cast<int64_t>(sizeof(Acc))}, DType::u8, in.device());
  Acc* partials = reinterpret_cast<Acc*>(scratch.data_ptr());
  reduce_kernel<T, O, Acc><<<blocks, threads, 0, stream>>>(in_data, out_data, partials, ix);
  DUET_CUDA_CHECK_LAUNCH();
  merge_parts_kernel<O, Acc><<<blocks_for(ix.outputs), kThreadsPerBlock, 0, stream>>>(partials, out_data, ix);
  DUET_CUDA_CHECK_LAUNCH();
}

// The kept dims (with their output and input strides) and the reduced dims (input strides) of
// one reduction, in the input's dim order.
struct ReduceGeometry {
  Shape kept_sizes, kept_out_strides, kept_in_strides, reduced_sizes, reduced_strides;
};

// Checks dims and the keepdim output shape as the CPU does, and splits the input's dims.
ReduceGeometry check_reduction(ReduceOp op, const Tensor& in, const std::vector<int64_t>& dims, const Tensor& out) {
  const char* op_name = kernels::name(op);
  const int64_t nd = in.dim();
  std::vector<bool> is_reduced(static_cast<size_t>(nd), dims.empty());
  for (size_t i = 0; i < dims.size(); ++i) {
    DUET_CHECK(dims[i] >= 0 && dims[i] < nd && (i == 0 || dims[i] > dims[i - 1]), op_name,
               ": dims must be ascending, unique and in [0, ", nd, "), for ", in.describe());
    is_reduced[static_cast<size_t>(dims[i])] = true;
  }
  DUET_CHECK(out.dim() == nd, op_name, ": output ", out.describe(), " must keep the rank of the input ", in.describe());
  ReduceGeometry g;
  for (int64_t d = 0; d < nd; ++d) {
    const bool reduced = is_reduced[static_cast<size_t>(d)];
    DUET_CHECK(out.size(d) == (reduced ? 1 : in.size(d)), op_name, ": output ", out.describe(),
               " does not match input ", in.describe(), " reduced over ", shape_str(dims), " with keepdim (dim ", d,
               ")");
    if (reduced) {
      g.reduced_sizes.push_back(in.size(d));
      g.reduced_strides.push_back(in.stride(d));
    } else {
      g.kept_sizes.push_back(in.size(d));
      g.kept_out_strides.push_back(out.stride(d));
      g.kept_in_strides.push_back(in.stride(d));
    }
  }
  if (kernels::is_arg_reduction(op)) {
    DUET_CHECK(g.reduced_sizes.size() <= 1, op_name, ": expected exactly one dim, got ", shape_str(dims), " for ",
               in.describe());
  }
  const DType out_dtype = kernels::reduce_output_dtype(op, in.dtype());
  DUET_CHECK(out.dtype() == out_dtype, op_name, ": expected output dtype ", dtype_name(out_dtype), " for ",
             in.describe(), ", got ", out.describe());
  const bool needs_elements = op == ReduceOp::max || op == ReduceOp::min || kernels::is_arg_reduction(op);
  DUET_CHECK(numel(g.reduced_sizes) > 0 || numel(g.kept_sizes) == 0 || !needs_elements, op_name,
             ": cannot reduce over an empty dim of ", in.describe());
  return g;
}

// The two index maps of a checked reduction, or nothing when the kept or the reduced dims need
// more than one launch's kMaxElementwiseDims after merging.
std::optional<ReduceIndexing> make_indexing(const ReduceGeometry& g, const Tensor& in, const Tensor& out,
                                            const char* op_name) {
  // Views with the kept and the reduced geometry, only to describe them to the offset
  // calculators (their data is never read through them).
  const Tensor out_kept = out.as_strided(g.kept_sizes, g.kept_out_strides, out.offset());
  const Tensor in_kept = in.as_strided(g.kept_sizes, g.kept_in_strides, in.offset());
  const Tensor in_reduced = in.as_strided(g.reduced_sizes, g.reduced_strides, in.offset());
  const ElementwiseLayout<2> kept = make_elementwise_layout<2>({&out_kept, &in_kept}, op_name);
  const ElementwiseLayout<1> reduced = make_elementwise_layout<1>({&in_reduced}, op_name);
  if (kept.outer.ndim > 0 || reduced.outer.ndim > 0) return std::nullopt;
  ReduceIndexing ix{};
  ix.outputs = numel(g.kept_sizes);
  ix.count = numel(g.reduced_sizes);
  ix.kept = kept.inner;
  ix.reduced = reduced.inner;
  ix.parts = parts_per_output(ix.outputs, ix.count);
  return ix;
}

// A dense copy of `in` with the kept dims outermost and the reduced ones innermost, each group
// in its own order, viewed back in in's dim order: its kept dims merge into one and so do its
// reduced dims, whatever in's layout was.
Tensor pack_reduced_innermost(const Tensor& in, const std::vector<int64_t>& dims, cudaStream_t stream) {
  const int64_t nd = in.dim();
  std::vector<int64_t> order;  // kept dims, then reduced dims
  for (int pass = 0; pass < 2; ++pass)
    for (int64_t d = 0; d < nd; ++d) {
      const bool reduced = dims.empty() || std::find(dims.begin(), dims.end(), d) != dims.end();
      if (reduced == (pass == 1)) order.push_back(d);
    }
  Shape permuted_sizes, permuted_strides;  // as_strided, not permute: no autograd in a kernel
  for (int64_t d : order) {
    permuted_sizes.push_back(in.size(d));
    permuted_strides.push_back(in.stride(d));
  }
  const Tensor permuted = in.as_strided(permuted_sizes, permuted_strides, in.offset());
  const Tensor packed = empty_contiguous(permuted_sizes, in.dtype(), in.device());
  launch_copy(permuted, packed, stream);
  Shape strides(static_cast<size_t>(nd));
  for (int64_t k = 0; k < nd; ++k) strides[static_cast<size_t>(order[static_cast<size_t>(k)])] = packed.stride(k);
  return packed.as_strided(in.sizes(), strides, packed.offset());
}

// Runs a checked reduction whose layout one launch indexes.
void run_indexed(ReduceOp op, const Tensor& in, const Tensor& out, const ReduceIndexing& ix, cudaStream_t stream) {
  dispatch_dtype(in.dtype(), [&]<class T>() {
    switch (op) {
      case ReduceOp::sum:
        return run_reduce<T, SumOutput<T>, SumAcc<T>>(in, out, ix, stream);
      case ReduceOp::max:
        return run_reduce<T, T, ExtremumAcc<T, true>>(in, out, ix, stream);
      case ReduceOp::min:
        return run_reduce<T, T, ExtremumAcc<T, false>>(in, out, ix, stream);
      case ReduceOp::argmax:
        return run_reduce<T, int64_t, ArgExtremumAcc<T, true>>(in, out, ix, stream);
      case ReduceOp::argmin:
        return run_reduce<T, int64_t, ArgExtremumAcc<T, false>>(in, out, ix, stream);
      case ReduceOp::mean:
      case ReduceOp::logsumexp:
        if constexpr (std::is_floating_point_v<T>) {
          if (op == ReduceOp::mean) return run_reduce<T, T, MeanAcc<T>>(in, out, ix, stream);
          return run_reduce<T, T, LogSumExpAcc<T>>(in, out, ix, stream);
        }
        DUET_FAIL(kernels::name(op), ": expected a floating dtype (f32 or f64), got ", in.describe());
    }
  });
}

}  // namespace

void launch_reduce(ReduceOp op, const Tensor& in, const std::vector<int64_t>& dims, const Tensor& out,
                   cudaStream_t stream) {
  const char* op_name = kernels::name(op);
  const ReduceGeometry g = check_reduction(op, in, dims, out);
  if (numel(g.kept_sizes) == 0) return;
  if (const auto ix = make_indexing(g, in, out, op_name)) return run_indexed(op, in, out, *ix, stream);
  // More merged dims than one launch indexes (a view permuted or sliced in many dims), which the
  // CPU takes as any other layout: reduce a packed copy of in, and into a dense output when out's
  // own layout is still too much. The copies cost time in this rare case only.
  const Tensor packed = pack_reduced_innermost(in, dims, stream);
  if (const auto ix = make_indexing(check_reduction(op, packed, dims, out), packed, out, op_name))
    return run_indexed(op, packed, out, *ix, stream);
  const Tensor dense_out = empty_contiguous(out.sizes(), out.dtype(), out.device());
  const auto ix = make_indexing(check_reduction(op, packed, dims, dense_out), packed, dense_out, op_name);
  DUET_CHECK(ix.has_value(), op_name, " on CUDA: a packed input and a dense output still need more than ",
             kMaxElementwiseDims, " dims, for ", in.describe());
  run_indexed(op, packed, dense_out, *ix, stream);
  launch_copy(dense_out, out, stream);
}

}  // namespace duet::cuda
