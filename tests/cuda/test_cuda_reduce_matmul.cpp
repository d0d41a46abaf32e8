// The CUDA reductions and matmul against the CPU kernels on the same random inputs: odd sizes,
// sizes that make the reduction split each output into parts, transposed and gapped inputs and
// outputs, and f32/f64 (plus the integer dtypes the reductions take). Outputs sit between
// sentinel guard bands.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "duet/kernels/backend.h"
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
    {{{37, 29}, {1, 40}, 5}, {0}, {}},                // transposed, with gaps
    {{{37, 29}, {1, 40}, 5}, {1}, {}},
    {dense({5, 7, 33}), {0, 2}, {}},
    {dense({4, 5, 6}), {1}, {1, 24, 4}},               // a transposed output
    {{{6, 5, 4}, {1, 6, 30}, 0}, {0, 2}, {}},
    {dense({3, 20001}), {1}, {}},                      // few outputs, many elements: split into parts
    {dense({100003}), {0}, {}},
    {{{2, 9000}, {1, 2}, 0}, {1}, {}},                 // split, strided
};

bool single_dim(const ReduceCase& c) { return c.dims.size() == 1 || (c.dims.empty() && c.in.sizes.size() <= 1); }

void check_reduce(ReduceOp op, DType dtype, const ReduceCase& c, size_t index, uint64_t seed) {
  const bool integral = !is_floating(dtype) || op == ReduceOp::argmax || op == ReduceOp::max || op == ReduceOp::min;
  const double high = dtype == DType::u8 ? 9 : 4;
  const double low = dtype == DType::u8 ? 0 : -4;
  auto in = test::random_pair(c.in.sizes, c.in.strides, c.in.offset, dtype, low, high, seed, integral);
  const Shape out_sizes = keepdim_shape(c.in.sizes, c.dims);
  const DType out_dtype = op == ReduceOp::argmax ? DType::i64 : dtype;
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
  const std::vector<ReduceOp> every_dtype = {ReduceOp::sum, ReduceOp::max, ReduceOp::min, ReduceOp::argmax};
  const std::vector<ReduceOp> floating_only = {ReduceOp::mean, ReduceOp::logsumexp};
  for (size_t i = 0; i < kReduceCases.size(); ++i) {
    const ReduceCase& c = kReduceCases[i];
    for (DType dtype : {DType::f32, DType::f64, DType::i64, DType::u8}) {
      for (ReduceOp op : every_dtype) {
        if (op == ReduceOp::argmax && !single_dim(c)) continue;
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
  CHECK_THROWS_AS(kernels::reduce(ReduceOp::argmax, in, {0, 1}, test::empty_tensor({1, 1}, DType::i64, kGpu)),
                  Error);
  CHECK_THROWS_AS(kernels::reduce(ReduceOp::argmax, in, {0}, test::empty_tensor({1, 5}, DType::f32, kGpu)), Error);
  Tensor ints = test::empty_tensor({4, 5}, DType::i64, kGpu);
  CHECK_THROWS_AS(kernels::reduce(ReduceOp::mean, ints, {0}, test::empty_tensor({1, 5}, DType::i64, kGpu)), Error);
  Tensor empty = test::empty_tensor({0, 3}, DType::f32, kGpu);
  CHECK_THROWS_AS(kernels::reduce(ReduceOp::max, empty, {0}, test::empty_tensor({1, 3}, DType::f32, kGpu)), Error);
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
    {dense({7, 0}), dense({0, 5}), dense({7, 5})},                                // k = 0: zeros
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
  CHECK_THROWS_AS(kernels::matmul(a, test::empty_tensor({5, 2}, DType::f32, kGpu),
                                  test::empty_tensor({3, 2}, DType::f32, kGpu)),
                  Error);
  Tensor ints = test::empty_tensor({3, 4}, DType::i64, kGpu);
  CHECK_THROWS_AS(kernels::matmul(ints, test::empty_tensor({4, 2}, DType::i64, kGpu),
                                  test::empty_tensor({3, 2}, DType::i64, kGpu)),
                  Error);
}
