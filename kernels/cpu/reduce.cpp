// Reductions (sum, mean, max, min, argmax, argmin, logsumexp) over chosen dims, keepdim layout.
//
// The kept dims and the reduced dims are coalesced separately (strided_loop.h's coalesce). Each
// output reduces its elements with straight loops over the innermost reduced run. Many
// outputs are shared among threads; a few large outputs are each split into parts whose
// partial accumulators are merged in order, so the result does not depend on scheduling.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "duet/kernels/cast.h"
#include "duet/kernels/cpu/cpu_backend.h"
#include "duet/kernels/cpu/strided_loop.h"

namespace duet::kernels::cpu {
namespace {

// Input elements per parallel task.
constexpr int64_t kReduceGrain = 32768;

template <class T> inline bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  else return false;
}

// f32 sums accumulate in double; integer sums in int64.
template <class T> using SumType = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

// Eight doubles, one 64-byte vector (GCC splits it where the machine's vectors are narrower).
typedef double DoubleLanes __attribute__((vector_size(64)));
template <class T> DoubleLanes as_double_lanes(const T* p) {
  typedef T Lanes __attribute__((vector_size(8 * sizeof(T))));
  Lanes v;
  std::memcpy(&v, p, sizeof v);
  return __builtin_convertvector(v, DoubleLanes);
}

// Accumulators: add(v, index) takes one element (index: its position along the reduced dims),
// merge() folds in the accumulator of a later range, result(count) gives the output.
template <class T> struct SumAcc {
  SumType<T> sum = 0;
  void add(T v, int64_t) { sum += v; }
  // A contiguous run with four independent chains, so the adds overlap in the pipeline; each
  // chain of a floating run is a vector of 8 double lanes, so the run is read at memory speed.
  void run(const T* p, int64_t n, int64_t stride, int64_t) {
    if (stride != 1) {
      for (int64_t i = 0; i < n; ++i) sum += p[i * stride];
      return;
    }
    int64_t i = 0;
    if constexpr (std::is_floating_point_v<T>) {
      DoubleLanes chains[4] = {};
      for (; i + 32 <= n; i += 32) {
        for (int c = 0; c < 4; ++c) chains[c] += as_double_lanes(p + i + 8 * c);
      }
      const DoubleLanes total = (chains[0] + chains[1]) + (chains[2] + chains[3]);
      for (int l = 0; l < 8; ++l) sum += total[l];
    }
    SumType<T> s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (; i + 4 <= n; i += 4) {
      s0 += p[i];
      s1 += p[i + 1];
      s2 += p[i + 2];
      s3 += p[i + 3];
    }
    for (; i < n; ++i) s0 += p[i];
    sum += (s0 + s1) + (s2 + s3);
  }
  void merge(const SumAcc& o) { sum += o.sum; }
  SumType<T> result(int64_t) const { return sum; }
};

template <class T> struct MeanAcc : SumAcc<T> {
  double result(int64_t count) const { return static_cast<double>(this->sum) / static_cast<double>(count); }
};

// max (kMax) or min; NaN wins, as in PyTorch.
template <class T, bool kMax> struct ExtremumAcc {
  // An infinity for floating types, so that an all -inf (or +inf) input gives it back.
  T best = std::is_floating_point_v<T>
               ? (kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity())
               : (kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max());
  static bool better(T v, T best) { return (kMax ? v > best : v < best) || is_nan(v); }
  void add(T v, int64_t) {
    if (better(v, best)) best = v;
  }
  void merge(const ExtremumAcc& o) { add(o.best, 0); }
  T result(int64_t) const { return best; }
};

// The first index of the maximum (kMax) or minimum; NaN counts as either.
template <class T, bool kMax> struct ArgExtremumAcc {
  T best{};
  int64_t index = -1;
  static bool better(T v, T best) { return !is_nan(best) && ((kMax ? v > best : v < best) || is_nan(v)); }
  void add(T v, int64_t i) {
    if (index < 0 || better(v, best)) {
      best = v;
      index = i;
    }
  }
  // A contiguous run: the first element seeds the accumulator, the rest only compare.
  void run(const T* p, int64_t n, int64_t stride, int64_t first) {
    int64_t i = 0;
    if (index < 0 && n > 0) {
      best = p[0];
      index = first;
      i = 1;
    }
    for (; i < n; ++i) {
      if (better(p[i * stride], best)) {
        best = p[i * stride];
        index = first + i;
      }
    }
  }
  void merge(const ArgExtremumAcc& o) {  // o covers later indices: ties keep ours
    if (o.index >= 0) add(o.best, o.index);
  }
  int64_t result(int64_t) const { return index; }
};

// Online log-sum-exp: keeps the running maximum and sum(exp(x - max)), so it never overflows.
template <class T> struct LogSumExpAcc {
  using A = SumType<T>;
  static constexpr A kNegInf = -std::numeric_limits<A>::infinity();
  A max = kNegInf, sum = 0;
  void combine(A m, A s) {                       // folds in a pair (m, s) of another range
    if (m == kNegInf && !std::isnan(s)) return;  // a NaN sum must survive the merge
    if (m > max) {
      sum = sum * std::exp(max - m) + s;
      max = m;
    } else {
      sum += m == max ? s : s * std::exp(m - max);  // equal: keeps inf - inf out
    }
  }
  void add(T v, int64_t) { combine(static_cast<A>(v), 1); }
  void merge(const LogSumExpAcc& o) { combine(o.max, o.sum); }
  // A NaN anywhere leaves sum NaN, even beside an infinity: the result is then NaN, as PyTorch's.
  A result(int64_t) const { return std::isinf(max) && !std::isnan(sum) ? max : max + std::log(sum); }
};

// n elements from p with an element stride; `first` is the index of the first one.
template <class Acc, class T> inline void run_acc(Acc& acc, const T* p, int64_t n, int64_t stride, int64_t first) {
  if constexpr (requires { acc.run(p, n, stride, first); }) {
    acc.run(p, n, stride, first);
  } else {
    for (int64_t i = 0; i < n; ++i) acc.add(p[i * stride], first + i);
  }
}

template <class V> void store(char* p, DType dtype, V value) {
  dispatch_dtype(dtype, [&]<class O>() { *reinterpret_cast<O*>(p) = cast_value<O>(value); });
}

struct ReducePlan {
  StridedLayout<2> kept;           // operands: out, in (byte strides)
  StridedLayout<1> reduced;        // in (byte strides)
  int64_t outputs = 0, count = 0;  // output elements; input elements per output
};

// Accumulates linear reduced elements [begin, end) of the output whose input starts at `in`.
template <class T, class Acc>
void accumulate(Acc& acc, const StridedLayout<1>& reduced, char* in, int64_t begin, int64_t end) {
  constexpr auto elem = static_cast<int64_t>(sizeof(T));
  if (reduced.sizes.size() == 1) {  // the common case, without for_each_run's bookkeeping
    const int64_t stride = reduced.strides[0][0];
    run_acc(acc, reinterpret_cast<const T*>(in + begin * stride), end - begin, stride / elem, begin);
    return;
  }
  int64_t position = begin;
  auto run = [&](const std::array<char*, 1>& p, const std::array<int64_t, 1>& s, int64_t n) {
    run_acc(acc, reinterpret_cast<const T*>(p[0]), n, s[0] / elem, position);
    position += n;
  };
  for_each_run(reduced, {in}, begin, end, run);
}

// Calls fn(out_ptr, in_ptr) for outputs [begin, end).
template <class Fn>
void for_each_output(const ReducePlan& plan, const Tensor& in, const Tensor& out, int64_t begin, int64_t end, Fn&& fn) {
  std::array<char*, 2> base{static_cast<char*>(out.data_ptr()), static_cast<char*>(in.data_ptr())};
  auto run = [&](const std::array<char*, 2>& p, const std::array<int64_t, 2>& s, int64_t n) {
    for (int64_t j = 0; j < n; ++j) fn(p[0] + j * s[0], p[1] + j * s[1]);
  };
  for_each_run(plan.kept, base, begin, end, run);
}

// When the input is dense along the innermost kept dim but not along the reduced dims (sum over
// the batch of [N, C], say), per-output loops would stride through memory. Instead each task
// keeps a tile of accumulators for adjacent outputs and adds whole input rows into it.
bool reduces_columns(const ReducePlan& plan, int64_t elem) {
  return plan.count > 1 && plan.kept.sizes.back() > 1 && plan.kept.strides[1].back() == elem &&
         plan.reduced.strides[0].back() != elem;
}

template <class T, class Acc> void run_column_reduce(const ReducePlan& plan, const Tensor& in, const Tensor& out) {
  const int64_t width = plan.kept.sizes.back(), rows = plan.outputs / width;
  const int64_t out_step = plan.kept.strides[0].back();
  const int64_t threads = pool_size();
  const int64_t tile = std::min<int64_t>(width, std::clamp<int64_t>((width + threads - 1) / threads, 64, 1024));
  const int64_t tiles = (width + tile - 1) / tile;
  const int64_t grain = std::max<int64_t>(1, kReduceGrain / (tile * plan.count));
  const DType out_dtype = out.dtype();
  parallel_for(rows * tiles, grain, [&](int64_t begin, int64_t end) {
    std::vector<Acc> acc(static_cast<size_t>(tile));
    for (int64_t task = begin; task < end; ++task) {
      const int64_t first = (task / tiles) * width + (task % tiles) * tile;
      const int64_t n = std::min(tile, width - (task % tiles) * tile);
      std::fill(acc.begin(), acc.begin() + n, Acc{});
      for_each_output(plan, in, out, first, first + 1, [&](char* o, char* i) {
        int64_t r = 0;
        auto add_rows = [&](const std::array<char*, 1>& p, const std::array<int64_t, 1>& s, int64_t count) {
          for (int64_t k = 0; k < count; ++k, ++r) {
            const T* row = reinterpret_cast<const T*>(p[0] + k * s[0]);
            for (int64_t j = 0; j < n; ++j) acc[static_cast<size_t>(j)].add(row[j], r);
          }
        };
        for_each_run(plan.reduced, {i}, 0, plan.count, add_rows);
        for (int64_t j = 0; j < n; ++j)
          store(o + j * out_step, out_dtype, acc[static_cast<size_t>(j)].result(plan.count));
      });
    }
  });
}

// Outputs whose reduced elements lie in runs a stride apart (two reduced dims, the inner one a
// run: a conv bias gradient, the sum of [N, C, H, W] over N, H and W, has N runs of H * W per
// channel). The outputs of a task take their runs in turns, the n-th run of every output before
// any output's next, so the input is read in order rather than in runs kilobytes apart, which
// defeats the prefetcher (docs/performance.md has the gain). Each output adds the same runs in the
// same order as one at a time would, so the result is unchanged.
template <class T, class Acc>
void run_reduce_by_runs(const ReducePlan& plan, const Tensor& in, const Tensor& out, int64_t grain) {
  const int64_t runs = plan.reduced.sizes[0], run = plan.reduced.sizes[1];
  const int64_t run_stride = plan.reduced.strides[0][0];
  const int64_t step = plan.reduced.strides[0][1] / static_cast<int64_t>(sizeof(T));
  const DType out_dtype = out.dtype();
  parallel_for(plan.outputs, grain, [&](int64_t begin, int64_t end) {
    std::vector<char*> inputs, outputs;
    for_each_output(plan, in, out, begin, end, [&](char* o, char* i) {
      outputs.push_back(o);
      inputs.push_back(i);
    });
    std::vector<Acc> acc(inputs.size());
    for (int64_t r = 0; r < runs; ++r) {
      for (size_t k = 0; k < inputs.size(); ++k) {
        run_acc(acc[k], reinterpret_cast<const T*>(inputs[k] + r * run_stride), run, step, r * run);
      }
    }
    for (size_t k = 0; k < outputs.size(); ++k) store(outputs[k], out_dtype, acc[k].result(plan.count));
  });
}

// Outputs a fixed stride apart, each reducing one contiguous run (the last dim of [N, C]): plain
// loops over the outputs, without for_each_output's bookkeeping and a dtype switch per output,
// which cost more than the arithmetic on rows as short as logits' (docs/performance.md).
bool reduces_rows(const ReducePlan& plan, int64_t elem) {
  return plan.kept.sizes.size() == 1 && plan.reduced.sizes.size() == 1 && plan.reduced.strides[0][0] == elem;
}

template <class T, class Acc>
void run_row_reduce(const ReducePlan& plan, const Tensor& in, const Tensor& out, int64_t grain) {
  const char* in_base = static_cast<const char*>(in.data_ptr());
  char* out_base = static_cast<char*>(out.data_ptr());
  const int64_t in_step = plan.kept.strides[1][0], out_step = plan.kept.strides[0][0];
  dispatch_dtype(out.dtype(), [&]<class O>() {
    parallel_for(plan.outputs, grain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        Acc acc;
        run_acc(acc, reinterpret_cast<const T*>(in_base + i * in_step), plan.count, 1, 0);
        *reinterpret_cast<O*>(out_base + i * out_step) = cast_value<O>(acc.result(plan.count));
      }
    });
  });
}

template <class T, class Acc> void run_reduce(const ReducePlan& plan, const Tensor& in, const Tensor& out) {
  if (reduces_columns(plan, sizeof(T))) return run_column_reduce<T, Acc>(plan, in, out);
  const int64_t threads = pool_size();
  // Few outputs with many elements each: split every output into `parts` for the threads.
  int64_t parts = 1;
  if (plan.outputs < threads && plan.count >= 2 * kReduceGrain)
    parts = std::min<int64_t>(plan.count / kReduceGrain, (threads + plan.outputs - 1) / plan.outputs);
  const DType out_dtype = out.dtype();
  if (parts == 1) {
    int64_t grain = std::max<int64_t>(1, kReduceGrain / std::max<int64_t>(plan.count, 1));
    if (reduces_rows(plan, sizeof(T))) return run_row_reduce<T, Acc>(plan, in, out, grain);
    if (plan.reduced.sizes.size() == 2) return run_reduce_by_runs<T, Acc>(plan, in, out, grain);
    parallel_for(plan.outputs, grain, [&](int64_t begin, int64_t end) {
      for_each_output(plan, in, out, begin, end, [&](char* o, char* i) {
        Acc acc;
        accumulate<T>(acc, plan.reduced, i, 0, plan.count);
        store(o, out_dtype, acc.result(plan.count));
      });
    });
    return;
  }
  std::vector<Acc> partial(static_cast<size_t>(plan.outputs * parts));
  parallel_for(plan.outputs * parts, 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      int64_t part = task % parts;
      for_each_output(plan, in, out, task / parts, task / parts + 1, [&](char*, char* i) {
        accumulate<T>(partial[static_cast<size_t>(task)], plan.reduced, i, plan.count * part / parts,
                      plan.count * (part + 1) / parts);
      });
    }
  });
  for (int64_t m = 0; m < plan.outputs; ++m) {
    Acc& total = partial[static_cast<size_t>(m * parts)];
    for (int64_t part = 1; part < parts; ++part) total.merge(partial[static_cast<size_t>(m * parts + part)]);
    for_each_output(plan, in, out, m, m + 1, [&](char* o, char*) { store(o, out_dtype, total.result(plan.count)); });
  }
}

ReducePlan make_plan(ReduceOp op, const Tensor& in, const std::vector<int64_t>& dims, const Tensor& out) {
  const char* op_name = name(op);
  const size_t nd = in.sizes().size();
  std::vector<bool> is_reduced(nd, dims.empty());
  for (size_t i = 0; i < dims.size(); ++i) {
    DUET_CHECK(dims[i] >= 0 && dims[i] < static_cast<int64_t>(nd) && (i == 0 || dims[i] > dims[i - 1]), op_name,
               ": dims must be ascending, unique and in [0, ", nd, "), for ", in.describe());
    is_reduced[static_cast<size_t>(dims[i])] = true;
  }
  DUET_CHECK(out.sizes().size() == nd, op_name, ": output ", out.describe(), " must keep the rank of the input ",
             in.describe());
  Shape kept_sizes, reduced_sizes;
  std::array<Shape, 2> kept_strides;
  std::array<Shape, 1> reduced_strides;
  const auto in_elem = static_cast<int64_t>(in.element_size()), out_elem = static_cast<int64_t>(out.element_size());
  for (size_t d = 0; d < nd; ++d) {
    int64_t expected = is_reduced[d] ? 1 : in.sizes()[d];
    DUET_CHECK(out.sizes()[d] == expected, op_name, ": output ", out.describe(), " does not match input ",
               in.describe(), " reduced over ", shape_str(dims), " with keepdim (dim ", d, ")");
    if (is_reduced[d]) {
      reduced_sizes.push_back(in.sizes()[d]);
      reduced_strides[0].push_back(in.strides()[d] * in_elem);
    } else {
      kept_sizes.push_back(in.sizes()[d]);
      kept_strides[0].push_back(out.strides()[d] * out_elem);
      kept_strides[1].push_back(in.strides()[d] * in_elem);
    }
  }
  if (is_arg_reduction(op)) {
    DUET_CHECK(reduced_sizes.size() <= 1, op_name, ": expected exactly one dim, got ", shape_str(dims), " for ",
               in.describe());
  }
  const DType out_dtype = reduce_output_dtype(op, in.dtype());
  DUET_CHECK(out.dtype() == out_dtype, op_name, ": expected output dtype ", dtype_name(out_dtype), " for ",
             in.describe(), ", got ", out.describe());
  ReducePlan plan;
  plan.outputs = numel(kept_sizes);
  plan.count = numel(reduced_sizes);
  plan.kept = coalesce(kept_sizes, kept_strides);
  plan.reduced = coalesce(reduced_sizes, reduced_strides);
  const bool needs_elements = op == ReduceOp::max || op == ReduceOp::min || is_arg_reduction(op);
  DUET_CHECK(plan.count > 0 || plan.outputs == 0 || !needs_elements, op_name, ": cannot reduce over an empty dim of ",
             in.describe());
  return plan;
}

}  // namespace

void reduce(ReduceOp op, const Tensor& in, const std::vector<int64_t>& dims, const Tensor& out) {
  const char* op_name = name(op);
  ReducePlan plan = make_plan(op, in, dims, out);
  if (plan.outputs == 0) return;
  dispatch_dtype(in.dtype(), [&]<class T>() {
    switch (op) {
      case ReduceOp::sum:
        return run_reduce<T, SumAcc<T>>(plan, in, out);
      case ReduceOp::max:
        return run_reduce<T, ExtremumAcc<T, true>>(plan, in, out);
      case ReduceOp::min:
        return run_reduce<T, ExtremumAcc<T, false>>(plan, in, out);
      case ReduceOp::argmax:
        return run_reduce<T, ArgExtremumAcc<T, true>>(plan, in, out);
      case ReduceOp::argmin:
        return run_reduce<T, ArgExtremumAcc<T, false>>(plan, in, out);
      case ReduceOp::mean:
      case ReduceOp::logsumexp:
        if constexpr (std::is_floating_point_v<T>) {
          if (op == ReduceOp::mean) return run_reduce<T, MeanAcc<T>>(plan, in, out);
          return run_reduce<T, LogSumExpAcc<T>>(plan, in, out);
        }
        DUET_FAIL(op_name, ": expected a floating dtype (f32 or f64), got ", in.describe());
    }
  });
}

}  // namespace duet::kernels::cpu
