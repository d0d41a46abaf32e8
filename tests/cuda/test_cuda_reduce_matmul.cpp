// The CUDA reductions and matmul against the CPU kernels on the same random inputs: odd sizes,
// sizes that make the reduction split each output into parts, transposed and gapped inputs and
// outputs, and f32/f64 (plus the integer dtypes the reductions take). Outputs sit between
// sentinel guard bands.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "constant_rows.h"
#include "cuda_test_util.h"
#include "duet/duet.h"
#include "duet/kernels/backend.h"
#include "duet/kernels/cuda/runtime.h"
#include "duet/kernels/kernels.h"

using namespace duet;
using kernels::ReduceOp;

namespace {

const Device kGpu = cuda_device(0);

struct Layout {
  Shape sizes;
  Shape strides;
  int64_t offset = 0;
};

Layout dense(Shape sizes) { return {sizes, contiguous_strides(sizes), 0}; }

Shape keepdim_shape(const Shape& sizes, const std::vector<int64_t>& dims) {
  Shape out = sizes;
  for (size_t d = 0; d < out.size(); ++d) {
    bool reduced = dims.empty();
    for (int64_t r : dims) reduced = reduced || r == static_cast<int64_t>(d);
    if (reduced) out[d] = 1;
  }
  return out;
}

struct ReduceCase {
  Layout in;
  std::vector<int64_t> dims;
  Shape out_strides;  // empty: a dense output
};

const std::vector<ReduceCase> kReduceCases = {
    {dense({}), {}, {}},
    {dense({1}), {0}, {}},
    {dense({1023}), {0}, {}},
    {dense({37, 29}), {0}, {}},
    {dense({37, 29}), {1}, {}},
    {dense({37, 29}), {}, {}},
    {{{37, 29}, {1, 40}, 5}, {0}, {}},  // transposed, with gaps
    {{{37, 29}, {1, 40}, 5}, {1}, {}},
    {dense({5, 7, 33}), {0, 2}, {}},
    {dense({4, 5, 6}), {1}, {1, 24, 4}},  // a transposed output
    {{{6, 5, 4}, {1, 6, 30}, 0}, {0, 2}, {}},
    {dense({3, 20001}), {1}, {}},  // few outputs, many elements: split into parts
    {dense({100003}), {0}, {}},
    {{{2, 9000}, {1, 2}, 0}, {1}, {}},  // split, strided
};

bool single_dim(const ReduceCase& c) { return c.dims.size() == 1 || (c.dims.empty() && c.in.sizes.size() <= 1); }

void check_reduce(ReduceOp op, DType dtype, const ReduceCase& c, size_t index, uint64_t seed) {
  const bool integral =
      !is_floating(dtype) || kernels::is_arg_reduction(op) || op == ReduceOp::max || op == ReduceOp::min;
  const double high = dtype == DType::u8 ? 9 : 4;
  const double low = dtype == DType::u8 ? 0 : -4;
  auto in = test::random_pair(c.in.sizes, c.in.strides, c.in.offset, dtype, low, high, seed, integral);
  const Shape out_sizes = keepdim_shape(c.in.sizes, c.dims);
  // argmax and argmin write i64, and so does a sum of integers (as torch.sum).
  const DType out_dtype = kernels::reduce_output_dtype(op, dtype);
  const Shape out_strides = c.out_strides.empty() ? contiguous_strides(out_sizes) : c.out_strides;
  test::GuardedOutput out(out_sizes, out_strides, out_dtype, kGpu);
  kernels::reduce(op, in.cuda, c.dims, out.view());
  Tensor expected = test::empty_tensor(out_sizes, out_dtype, cpu());
  kernels::cpu_backend().reduce(op, in.cpu, c.dims, expected);
  const double tol = is_floating(out_dtype) ? (dtype == DType::f32 ? 1e-5 : 1e-12) : 0.0;
  test::require_close(out.check_and_fetch(), expected, tol, tol,
                      std::string(kernels::name(op)) + " " + dtype_name(dtype) + " case " + std::to_string(index));
}

}  // namespace

TEST_CASE("CUDA reductions match the CPU over any dims and layouts", "[cuda]") {
  uint64_t seed = 1000;
  const std::vector<ReduceOp> every_dtype = {ReduceOp::sum, ReduceOp::max, ReduceOp::min, ReduceOp::argmax,
                                             ReduceOp::argmin};
  const std::vector<ReduceOp> floating_only = {ReduceOp::mean, ReduceOp::logsumexp};
  for (size_t i = 0; i < kReduceCases.size(); ++i) {
    const ReduceCase& c = kReduceCases[i];
    for (DType dtype : {DType::f32, DType::f64, DType::i64, DType::u8}) {
      for (ReduceOp op : every_dtype) {
        if (kernels::is_arg_reduction(op) && !single_dim(c)) continue;
        check_reduce(op, dtype, c, i, ++seed);
      }
      if (!is_floating(dtype)) continue;
      for (ReduceOp op : floating_only) check_reduce(op, dtype, c, i, ++seed);
    }
  }
}

TEST_CASE("CUDA reductions reject what the CPU rejects", "[cuda]") {
  Tensor in = test::empty_tensor({4, 5}, DType::f32, kGpu);
  CHECK_THROWS_AS(kernels::reduce(ReduceOp::sum, in, {0}, test::empty_tensor({4, 5}, DType::f32, kGpu)), Error);
  CHECK_THROWS_AS(kernels::reduce(ReduceOp::argmax, in, {0, 1}, test::empty_tensor({1, 1}, DType::i64, kGpu)), Error);
  CHECK_THROWS_AS(kernels::reduce(ReduceOp::argmax, in, {0}, test::empty_tensor({1, 5}, DType::f32, kGpu)), Error);
  CHECK_THROWS_AS(kernels::reduce(ReduceOp::argmin, in, {0, 1}, test::empty_tensor({1, 1}, DType::i64, kGpu)), Error);
  Tensor ints = test::empty_tensor({4, 5}, DType::i64, kGpu);
  CHECK_THROWS_AS(kernels::reduce(ReduceOp::mean, ints, {0}, test::empty_tensor({1, 5}, DType::i64, kGpu)), Error);
  Tensor bytes = test::empty_tensor({4, 5}, DType::u8, kGpu);
  CHECK_THROWS_AS(kernels::reduce(ReduceOp::sum, bytes, {0}, test::empty_tensor({1, 5}, DType::u8, kGpu)), Error);
  Tensor empty = test::empty_tensor({0, 3}, DType::f32, kGpu);
  CHECK_THROWS_AS(kernels::reduce(ReduceOp::max, empty, {0}, test::empty_tensor({1, 3}, DType::f32, kGpu)), Error);
}

TEST_CASE("CUDA reductions propagate NaN and infinities as the CPU does", "[cuda]") {
  // Short rows, so most threads of a block see one element or none: a NaN held by a thread that
  // saw nothing else must survive the block's merge tree. Row 0 finite, row 1 a NaN at 5, row 2
  // all -inf, row 3 a +inf, row 4 NaNs at 2 and 7.
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (DType dtype : {DType::f32, DType::f64}) {
    Tensor host = test::empty_tensor({5, 10}, dtype, cpu());
    dispatch_floating(dtype, "test", [&]<class T>() {
      T* x = host.data<T>();
      for (int64_t i = 0; i < 50; ++i) x[i] = static_cast<T>(std::sin(0.7 * static_cast<double>(i)));
      x[15] = static_cast<T>(nan);
      for (int64_t j = 20; j < 30; ++j) x[j] = static_cast<T>(-inf);
      x[33] = static_cast<T>(inf);
      x[42] = x[47] = static_cast<T>(nan);
    });
    const Tensor in = test::copy_to(host, kGpu);
    for (ReduceOp op :
         {ReduceOp::sum, ReduceOp::max, ReduceOp::min, ReduceOp::argmax, ReduceOp::argmin, ReduceOp::logsumexp}) {
      const DType out_dtype = kernels::reduce_output_dtype(op, dtype);
      test::GuardedOutput out({5, 1}, out_dtype, kGpu);
      kernels::reduce(op, in, {1}, out.view());
      Tensor expected = test::empty_tensor({5, 1}, out_dtype, cpu());
      kernels::cpu_backend().reduce(op, host, {1}, expected);
      const double tol = out_dtype == DType::f32 ? 1e-5 : (out_dtype == DType::f64 ? 1e-12 : 0.0);
      test::require_close(out.check_and_fetch(), expected, tol, tol,
                          std::string(kernels::name(op)) + " with NaN and inf, " + dtype_name(dtype));
    }
  }
}

TEST_CASE("CUDA reductions over an empty dim give the CPU's identities", "[cuda]") {
  // No element per output: sum 0, mean NaN, logsumexp -inf.
  for (DType dtype : {DType::f32, DType::f64, DType::i64}) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::mean, ReduceOp::logsumexp}) {
      if (!is_floating(dtype) && op != ReduceOp::sum) continue;
      test::GuardedOutput out({1, 3}, dtype, kGpu);
      kernels::reduce(op, test::empty_tensor({0, 3}, dtype, kGpu), {0}, out.view());
      Tensor expected = test::empty_tensor({1, 3}, dtype, cpu());
      kernels::cpu_backend().reduce(op, test::empty_tensor({0, 3}, dtype, cpu()), {0}, expected);
      test::require_close(out.check_and_fetch(), expected, 0, 0,
                          std::string(kernels::name(op)) + " over an empty dim, " + dtype_name(dtype));
    }
  }
}

TEST_CASE("CUDA reductions are deterministic, also when split into parts", "[cuda]") {
  auto in = test::random_pair({3, 200003}, DType::f32, -4, 4, 1500);
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::logsumexp}) {
    test::GuardedOutput first({3, 1}, DType::f32, kGpu), second({3, 1}, DType::f32, kGpu);
    kernels::reduce(op, in.cuda, {1}, first.view());
    kernels::reduce(op, in.cuda, {1}, second.view());
    test::require_identical(second.check_and_fetch(), first.check_and_fetch(),
                            std::string(kernels::name(op)) + " run twice");
  }
}

namespace {

// Ten dims whose strides (powers of 3) let no two merge, one of them of size 5 so that argmax
// has a choice: reducing one dim keeps 9, reducing all reduces 10, more than one launch's
// kMaxElementwiseDims (offset_calculator.h), so the reduction packs the input first.
const Shape kUnmergeableSizes = {2, 2, 2, 5, 2, 2, 2, 2, 2, 2};
Shape unmergeable_strides(const Shape& sizes) {
  Shape strides(sizes.size());
  int64_t stride = 1;
  for (size_t d = sizes.size(); d-- > 0; stride *= 3) strides[d] = stride;
  return strides;
}

}  // namespace

// Integral values, so that every sum is exact in any order and the CPU's bits are the only
// right answer; the outputs' own layout unmergeable too where kept dims remain.
TEST_CASE("CUDA reductions over layouts of more than 8 merged dims match the CPU", "[cuda]") {
  const Shape strides = unmergeable_strides(kUnmergeableSizes);
  uint64_t seed = 1600;
  for (DType dtype : {DType::f32, DType::f64, DType::i64}) {
    const auto in = test::random_pair(kUnmergeableSizes, strides, 3, dtype, -4, 4, ++seed, true);
    struct Case {
      ReduceOp op;
      std::vector<int64_t> dims;
    };
    for (const Case& c : std::vector<Case>{{ReduceOp::sum, {}},
                                           {ReduceOp::sum, {0}},
                                           {ReduceOp::sum, {3}},
                                           {ReduceOp::max, {3}},
                                           {ReduceOp::max, {0, 1, 2, 4, 5, 6, 7, 8, 9}},
                                           {ReduceOp::argmax, {3}},
                                           {ReduceOp::argmin, {9}}}) {
      const Shape out_sizes = keepdim_shape(kUnmergeableSizes, c.dims);
      const DType out_dtype = kernels::reduce_output_dtype(c.op, dtype);
      const std::string what = std::string(kernels::name(c.op)) + " " + dtype_name(dtype) + " over " +
                               shape_str(c.dims) + " of 10 unmergeable dims";
      Tensor expected = test::empty_tensor(out_sizes, out_dtype, cpu());
      kernels::cpu_backend().reduce(c.op, in.cpu, c.dims, expected);
      for (bool dense_out : {true, false}) {
        test::GuardedOutput out(out_sizes, dense_out ? contiguous_strides(out_sizes) : unmergeable_strides(out_sizes),
                                out_dtype, kGpu);
        kernels::reduce(c.op, in.cuda, c.dims, out.view());
        test::require_identical(out.check_and_fetch(), expected, what + (dense_out ? "" : ", strided output"));
      }
    }
  }
}

// var is made of tensor ops (autograd/variance_ops.cpp): the row's first element, mean, the
// deviations, the sum of their squares; the elementwise ones read this layout in place and the
// reductions run over their dense results. Integral values and rows of 2^k elements keep every
// step exact (the mean a multiple of 2^-k, the squares exact in f32, their sum exact in double),
// so CUDA must give the CPU's bits here too.
TEST_CASE("CUDA var over layouts of more than 8 merged dims matches the CPU", "[cuda]") {
  const Shape sizes(10, 2), strides = unmergeable_strides(Shape(10, 2));
  uint64_t seed = 1700;
  for (DType dtype : {DType::f32, DType::f64}) {
    const auto in = test::random_pair(sizes, strides, 3, dtype, -4, 4, ++seed, true);
    for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{0}, {}, {1, 2, 3, 4, 5, 6, 7, 8, 9}}) {
      for (bool unbiased : {true, false}) {
        const Tensor expected = var(in.cpu, dims, unbiased);
        const Tensor actual = var(in.cuda, dims, unbiased).to(cpu());
        test::require_identical(actual, expected,
                                std::string("var ") + dtype_name(dtype) + " over " + shape_str(dims) +
                                    (unbiased ? " unbiased" : " biased"));
      }
    }
  }
}

namespace {

struct MatmulCase {
  Layout a, b, out;
};

// [m, k] @ [k, n]: dense, transposed operands (strides with a leading dimension larger than the
// matrix), a column-major output, a layout cuBLAS cannot read (copied), vectors, and batches
// with gaps between items.
const std::vector<MatmulCase> kMatmulCases = {
    {dense({33, 17}), dense({17, 45}), dense({33, 45})},
    {{{33, 17}, {1, 40}, 3}, dense({17, 45}), dense({33, 45})},
    {dense({33, 17}), {{17, 45}, {1, 20}, 1}, dense({33, 45})},
    {{{33, 17}, {1, 33}, 0}, {{17, 45}, {1, 17}, 0}, {{33, 45}, {1, 33}, 0}},
    {{{33, 17}, {40, 1}, 2}, {{17, 45}, {50, 1}, 0}, {{33, 45}, {50, 1}, 0}},
    {{{33, 17}, {34, 2}, 0}, dense({17, 45}), {{33, 45}, {2, 70}, 0}},
    {dense({1, 17}), dense({17, 1}), dense({1, 1})},
    {dense({1, 17}), dense({17, 45}), dense({1, 45})},
    {dense({33, 1}), dense({1, 45}), dense({33, 45})},
    {dense({5, 9, 13}), dense({5, 13, 7}), dense({5, 9, 7})},
    {{{5, 9, 13}, {200, 1, 9}, 4}, {{5, 13, 7}, {100, 7, 1}, 0}, {{5, 9, 7}, {70, 7, 1}, 0}},
    {{{5, 9, 13}, {0, 13, 1}, 0}, dense({5, 13, 7}), {{5, 9, 7}, {63, 1, 9}, 0}},  // a broadcast batch
    {dense({7, 0}), dense({0, 5}), dense({7, 5})},                                 // k = 0: zeros
};

}  // namespace

TEST_CASE("CUDA matmul matches the CPU for 2-D, batched and strided operands", "[cuda]") {
  uint64_t seed = 2000;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (size_t i = 0; i < kMatmulCases.size(); ++i) {
      const MatmulCase& c = kMatmulCases[i];
      auto a = test::random_pair(c.a.sizes, c.a.strides, c.a.offset, dtype, -1, 1, ++seed);
      auto b = test::random_pair(c.b.sizes, c.b.strides, c.b.offset, dtype, -1, 1, ++seed);
      test::GuardedOutput out(c.out.sizes, c.out.strides, dtype, kGpu);
      kernels::matmul(a.cuda, b.cuda, out.view());
      Tensor expected = test::empty_tensor(c.out.sizes, dtype, cpu());
      kernels::cpu_backend().matmul(a.cpu, b.cpu, expected);
      const double tol = dtype == DType::f32 ? 1e-4 : 1e-12;
      test::require_close(out.check_and_fetch(), expected, tol, tol,
                          std::string("matmul ") + dtype_name(dtype) + " case " + std::to_string(i));
    }
  }
}

TEST_CASE("CUDA matmul rejects mismatched shapes and integer dtypes", "[cuda]") {
  Tensor a = test::empty_tensor({3, 4}, DType::f32, kGpu);
  CHECK_THROWS_AS(
      kernels::matmul(a, test::empty_tensor({5, 2}, DType::f32, kGpu), test::empty_tensor({3, 2}, DType::f32, kGpu)),
      Error);
  Tensor ints = test::empty_tensor({3, 4}, DType::i64, kGpu);
  CHECK_THROWS_AS(
      kernels::matmul(ints, test::empty_tensor({4, 2}, DType::i64, kGpu), test::empty_tensor({3, 2}, DType::i64, kGpu)),
      Error);
}

TEST_CASE("CUDA matmul uses TF32 only while it is allowed", "[cuda]") {
  // Restores the default even when a check fails, so later tests run without TF32.
  struct Tf32Off {
    ~Tf32Off() { cuda::set_allow_tf32(false); }
  } restore;
  auto a = test::random_pair({64, 256}, DType::f32, -1, 1, 2500);
  auto b = test::random_pair({256, 48}, DType::f32, -1, 1, 2501);
  Tensor expected = test::empty_tensor({64, 48}, DType::f32, cpu());
  kernels::cpu_backend().matmul(a.cpu, b.cpu, expected);
  for (bool tf32 : {true, false}) {  // off last: the handle's math mode must be reset, not sticky
    cuda::set_allow_tf32(tf32);
    test::GuardedOutput out({64, 48}, DType::f32, kGpu);
    kernels::matmul(a.cuda, b.cuda, out.view());
    const double tol = tf32 ? 5e-2 : 1e-4;  // TF32 rounds the inputs to 10 mantissa bits
    test::require_close(out.check_and_fetch(), expected, tol, tol, tf32 ? "matmul with TF32" : "matmul after TF32");
  }
}

TEST_CASE("CUDA var and std of a constant row are exactly 0, with gradients of 0", "[cuda]") {
  test::check_constant_rows_spread(kGpu);
}
