// Every CUDA elementwise kernel against the CPU kernel on the same random inputs: unary and
// binary ops with their backward, and where, each with the tolerance cuda_test_util.h says
// holds. Inputs are contiguous, broadcast and strided (as_strided views with gaps and
// transposes); outputs sit between sentinel guard bands.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "duet/kernels/backend.h"
#include "duet/kernels/kernels.h"

using namespace duet;
using kernels::BinaryOp;
using kernels::UnaryOp;

namespace {

struct Layout {
  Shape sizes;
  Shape strides;
  int64_t offset = 0;
};

Layout dense(Shape sizes) { return {sizes, contiguous_strides(sizes), 0}; }

const Device kGpu = cuda_device(0);
const kernels::Backend& cpu_kernels() { return kernels::cpu_backend(); }

// Unary cases: {input, output}. Odd sizes, one past a block, a transposed input with gaps, a
// column-major output and a broadcast input.
struct UnaryCase {
  Layout in, out;
};
const std::vector<UnaryCase> kUnaryCases = {
    {dense({1}), dense({1})},
    {dense({1023}), dense({1023})},
    {dense({3, 1001}), dense({3, 1001})},
    {{{37, 29}, {1, 40}, 5}, dense({37, 29})},
    {dense({37, 29}), {{37, 29}, {1, 37}, 0}},
    {{{37, 29}, {61, 2}, 3}, {{37, 29}, {60, 2}, 0}},
    {{{1, 29}, {29, 1}, 0}, dense({37, 29})},
};

// Binary cases: {a, b, out}, including NumPy broadcasting, a 0-d operand and strided views.
struct BinaryCase {
  Layout a, b, out;
};
const std::vector<BinaryCase> kBinaryCases = {
    {dense({1001}), dense({1001}), dense({1001})},
    {dense({5, 1, 7}), dense({3, 1}), dense({5, 3, 7})},
    {dense({}), dense({4, 33}), dense({4, 33})},
    {{{33, 17}, {1, 40}, 2}, {{17}, {3}, 1}, {{33, 17}, {1, 33}, 0}},
    {{{9, 1, 13}, {13, 0, 1}, 0}, {{9, 6, 13}, {200, 30, 2}, 7}, {{9, 6, 13}, {160, 26, 2}, 0}},
};

const std::vector<UnaryOp> kUnaryOps = {UnaryOp::neg, UnaryOp::exp,  UnaryOp::log,     UnaryOp::sqrt,
                                        UnaryOp::abs, UnaryOp::relu, UnaryOp::sigmoid, UnaryOp::tanh};
const std::vector<BinaryOp> kArithmeticOps = {BinaryOp::add,     BinaryOp::sub,          BinaryOp::mul,
                                              BinaryOp::div,     BinaryOp::floor_divide, BinaryOp::pow,
                                              BinaryOp::maximum, BinaryOp::minimum};

bool divides(BinaryOp op) { return op == BinaryOp::div || op == BinaryOp::floor_divide; }
const std::vector<BinaryOp> kComparisonOps = {BinaryOp::eq, BinaryOp::ne, BinaryOp::lt,
                                              BinaryOp::le, BinaryOp::gt, BinaryOp::ge};
const std::vector<DType> kFloating = {DType::f32, DType::f64};
const std::vector<DType> kAllDTypes = {DType::f32, DType::f64, DType::i64, DType::u8};

struct Range {
  double low, high;
};

Range unary_domain(UnaryOp op) { return (op == UnaryOp::log || op == UnaryOp::sqrt) ? Range{0.05, 4} : Range{-4, 4}; }

// Where an arithmetic op's floating operands are drawn from: pow's base positive, no divisor
// near zero, and for maximum and minimum integral values, so that ties occur.
struct BinaryDomain {
  Range a, b;
  bool ties;
};

BinaryDomain floating_domain(BinaryOp op) {
  bool ties = op == BinaryOp::maximum || op == BinaryOp::minimum;
  Range ra = op == BinaryOp::pow ? Range{0.2, 3} : Range{-4, 4};
  Range rb = op == BinaryOp::pow ? Range{-2, 2} : (divides(op) ? Range{0.5, 3} : Range{-4, 4});
  return {ra, rb, ties};
}

std::string label(const char* op, DType dtype, size_t case_index) {
  return std::string(op) + " " + dtype_name(dtype) + " case " + std::to_string(case_index);
}

// The promises of cuda_test_util.h. Forward: the CPU's bits, or within a few ulp where each
// side calls its own math library.
uint64_t forward_ulps(UnaryOp op) {
  if (op == UnaryOp::sigmoid) return test::kSigmoidUlps;
  return op == UnaryOp::exp || op == UnaryOp::log || op == UnaryOp::tanh ? test::kLibmUlps : 0;
}
uint64_t forward_ulps(BinaryOp op) { return op == BinaryOp::pow ? test::kPowUlps : 0; }

void compare_forward(const test::GuardedOutput& out, const Tensor& expected, uint64_t ulps, const std::string& what) {
  if (ulps == 0 || !is_floating(expected.dtype()))
    return test::require_identical(out.check_and_fetch(), expected, what);
  test::require_within_ulps(out.check_and_fetch(), expected, ulps, what);
}

// Backward: derivatives multiply and cancel the device's differences, relative and absolute.
void compare_backward(const test::GuardedOutput& out, const Tensor& expected, const std::string& what) {
  const double tol = test::rtol_for(expected.dtype());
  test::require_close(out.check_and_fetch(), expected, tol, tol, what);
}

}  // namespace

TEST_CASE("CUDA unary ops match the CPU", "[cuda]") {
  uint64_t seed = 100;
  for (UnaryOp op : kUnaryOps) {
    std::vector<DType> dtypes = kFloating;
    if (op == UnaryOp::neg || op == UnaryOp::abs) dtypes = kAllDTypes;
    for (DType dtype : dtypes) {
      for (size_t c = 0; c < kUnaryCases.size(); ++c) {
        const UnaryCase& uc = kUnaryCases[c];
        Range r = is_floating(dtype) ? unary_domain(op) : (dtype == DType::u8 ? Range{0, 255} : Range{-100, 100});
        auto in = test::random_pair(uc.in.sizes, uc.in.strides, uc.in.offset, dtype, r.low, r.high, ++seed);
        test::GuardedOutput out(uc.out.sizes, uc.out.strides, dtype, kGpu);
        kernels::unary(op, in.cuda, out.view());
        Tensor expected = test::empty_tensor(uc.out.sizes, dtype, cpu());
        cpu_kernels().unary(op, in.cpu, expected);
        compare_forward(out, expected, forward_ulps(op), label(kernels::name(op), dtype, c));
      }
    }
  }
}

TEST_CASE("CUDA unary backward matches the CPU, with and without the saved input or output", "[cuda]") {
  uint64_t seed = 200;
  for (UnaryOp op : kUnaryOps) {
    for (DType dtype : kFloating) {
      for (size_t c = 0; c < kUnaryCases.size(); ++c) {
        const UnaryCase& uc = kUnaryCases[c];
        Range r = unary_domain(op);
        // The forward pair at out's shape: x, and y computed once on the CPU so both sides
        // differentiate at the very same point.
        auto x = test::random_pair(uc.out.sizes, dtype, r.low, r.high, ++seed);
        Tensor y_cpu = test::empty_tensor(uc.out.sizes, dtype, cpu());
        cpu_kernels().unary(op, x.cpu, y_cpu);
        Tensor y_gpu = test::copy_to(y_cpu, kGpu);
        auto grad = test::random_pair(uc.in.sizes, uc.in.strides, uc.in.offset, dtype, -2, 2, ++seed);

        enum Saved { kBoth, kInputOnly, kOutputOnly };
        for (Saved saved : {kBoth, kInputOnly, kOutputOnly}) {
          if (saved == kOutputOnly && (op == UnaryOp::log || op == UnaryOp::abs || op == UnaryOp::relu)) continue;
          Tensor x_cpu = saved == kOutputOnly ? Tensor() : x.cpu, x_gpu = saved == kOutputOnly ? Tensor() : x.cuda;
          Tensor yc = saved == kInputOnly ? Tensor() : y_cpu, yg = saved == kInputOnly ? Tensor() : y_gpu;
          test::GuardedOutput grad_in(uc.out.sizes, uc.out.strides, dtype, kGpu);
          kernels::unary_backward(op, grad.cuda, x_gpu, yg, grad_in.view());
          Tensor expected = test::empty_tensor(uc.out.sizes, dtype, cpu());
          cpu_kernels().unary_backward(op, grad.cpu, x_cpu, yc, expected);
          compare_backward(grad_in, expected,
                           label(kernels::name(op), dtype, c) + " backward, saved " + std::to_string(int(saved)));
        }
      }
    }
  }
}

TEST_CASE("CUDA unary backward without the input it needs is an error", "[cuda]") {
  Tensor g = test::empty_tensor({4}, DType::f32, kGpu), out = test::empty_tensor({4}, DType::f32, kGpu);
  CHECK_THROWS_AS(kernels::unary_backward(UnaryOp::log, g, Tensor(), out, out), Error);
}

TEST_CASE("CUDA binary ops match the CPU, with broadcasting and strides", "[cuda]") {
  uint64_t seed = 300;
  auto run = [&](BinaryOp op, DType dtype, Range ra, Range rb, bool integral, DType out_dtype) {
    for (size_t c = 0; c < kBinaryCases.size(); ++c) {
      const BinaryCase& bc = kBinaryCases[c];
      auto a = test::random_pair(bc.a.sizes, bc.a.strides, bc.a.offset, dtype, ra.low, ra.high, ++seed, integral);
      auto b = test::random_pair(bc.b.sizes, bc.b.strides, bc.b.offset, dtype, rb.low, rb.high, ++seed, integral);
      test::GuardedOutput out(bc.out.sizes, bc.out.strides, out_dtype, kGpu);
      kernels::binary(op, a.cuda, b.cuda, out.view());
      Tensor expected = test::empty_tensor(bc.out.sizes, out_dtype, cpu());
      cpu_kernels().binary(op, a.cpu, b.cpu, expected);
      compare_forward(out, expected, forward_ulps(op), label(kernels::name(op), dtype, c));
    }
  };
  SECTION("arithmetic on floating dtypes") {
    for (BinaryOp op : kArithmeticOps) {
      const BinaryDomain d = floating_domain(op);
      for (DType dtype : kFloating) run(op, dtype, d.a, d.b, d.ties, dtype);
    }
  }
  SECTION("arithmetic on integer dtypes (every op but pow)") {
    for (BinaryOp op : kArithmeticOps) {
      if (op == BinaryOp::pow) continue;
      for (DType dtype : {DType::i64, DType::u8}) {
        Range ra = dtype == DType::u8 ? Range{0, 255} : Range{-50, 50};
        Range rb = divides(op) ? Range{1, 9} : ra;  // no division by zero
        run(op, dtype, ra, rb, true, dtype);
      }
    }
  }
  SECTION("comparisons on every dtype write u8") {
    for (BinaryOp op : kComparisonOps)
      for (DType dtype : kAllDTypes) run(op, dtype, {0, 4}, {0, 4}, true, DType::u8);
  }
}

TEST_CASE("CUDA binary backward matches the CPU for both operands", "[cuda]") {
  uint64_t seed = 400;
  for (BinaryOp op : kArithmeticOps) {
    const BinaryDomain d = floating_domain(op);
    for (DType dtype : kFloating) {
      for (size_t c = 0; c < kBinaryCases.size(); ++c) {
        const BinaryCase& bc = kBinaryCases[c];
        auto a = test::random_pair(bc.a.sizes, bc.a.strides, bc.a.offset, dtype, d.a.low, d.a.high, ++seed, d.ties);
        auto b = test::random_pair(bc.b.sizes, bc.b.strides, bc.b.offset, dtype, d.b.low, d.b.high, ++seed, d.ties);
        auto grad = test::random_pair(bc.out.sizes, dtype, -2, 2, ++seed);
        Tensor y_cpu = test::empty_tensor(bc.out.sizes, dtype, cpu());
        cpu_kernels().binary(op, a.cpu, b.cpu, y_cpu);
        Tensor y_gpu = test::copy_to(y_cpu, kGpu);

        for (bool with_output : {true, false}) {
          // grad_a strided like the forward output's case; grad_b dense.
          test::GuardedOutput grad_a(bc.out.sizes, bc.out.strides, dtype, kGpu);
          test::GuardedOutput grad_b(bc.out.sizes, dtype, kGpu);
          kernels::binary_backward(op, grad.cuda, a.cuda, b.cuda, with_output ? y_gpu : Tensor(), grad_a.view(),
                                   grad_b.view());
          Tensor expected_a = test::empty_tensor(bc.out.sizes, dtype, cpu());
          Tensor expected_b = test::empty_tensor(bc.out.sizes, dtype, cpu());
          cpu_kernels().binary_backward(op, grad.cpu, a.cpu, b.cpu, with_output ? y_cpu : Tensor(), expected_a,
                                        expected_b);
          std::string what = label(kernels::name(op), dtype, c) + (with_output ? " with out" : " recomputing out");
          compare_backward(grad_a, expected_a, what + ": d/da");
          compare_backward(grad_b, expected_b, what + ": d/db");
        }
      }
    }
  }
}

TEST_CASE("CUDA binary backward skips an undefined gradient", "[cuda]") {
  auto a = test::random_pair({5, 3}, DType::f32, -1, 1, 1);
  auto b = test::random_pair({5, 3}, DType::f32, -1, 1, 2);
  auto grad = test::random_pair({5, 3}, DType::f32, -1, 1, 3);
  test::GuardedOutput grad_b({5, 3}, DType::f32, kGpu);
  kernels::binary_backward(BinaryOp::mul, grad.cuda, a.cuda, b.cuda, Tensor(), Tensor(), grad_b.view());
  Tensor expected = test::empty_tensor({5, 3}, DType::f32, cpu());
  cpu_kernels().binary_backward(BinaryOp::mul, grad.cpu, a.cpu, b.cpu, Tensor(), Tensor(), expected);
  compare_backward(grad_b, expected, "mul d/db only");
}

TEST_CASE("CUDA where matches the CPU on every dtype, broadcast", "[cuda]") {
  uint64_t seed = 500;
  for (DType dtype : kAllDTypes) {
    auto cond = test::random_pair({5, 1, 7}, DType::u8, 0, 1, ++seed);
    auto a = test::random_pair({3, 7}, {10, 1}, 2, dtype, 0, 100, ++seed);
    auto b = test::random_pair({5, 3, 1}, dtype, 0, 100, ++seed);
    test::GuardedOutput out({5, 3, 7}, {1, 5, 15}, dtype, kGpu);
    kernels::where(cond.cuda, a.cuda, b.cuda, out.view());
    Tensor expected = test::empty_tensor({5, 3, 7}, dtype, cpu());
    cpu_kernels().where(cond.cpu, a.cpu, b.cpu, expected);
    test::require_identical(out.check_and_fetch(), expected, std::string("where ") + dtype_name(dtype));
  }
}

// Ten dims of size 2 whose strides (powers of 3) let no two merge: more than one launch's
// kMaxElementwiseDims, so the launcher loops over the outer dims (offset_calculator.h). The CPU
// handles any number of dims; CUDA must give the same values.
TEST_CASE("CUDA elementwise kernels handle layouts of more than 8 merged dims", "[cuda]") {
  Shape sizes(10, 2), strides(10);
  for (int d = 9, stride = 1; d >= 0; --d, stride *= 3) strides[static_cast<size_t>(d)] = stride;
  test::TensorPair a = test::random_pair(sizes, strides, 5, DType::f32, -3, 3, 21);
  test::TensorPair b = test::random_pair(sizes, DType::f32, -3, 3, 22);
  test::GuardedOutput out(sizes, strides, DType::f32, kGpu);
  kernels::binary(BinaryOp::add, a.cuda, b.cuda, out.view());
  Tensor expected = test::empty_tensor(sizes, DType::f32, cpu());
  cpu_kernels().binary(BinaryOp::add, a.cpu, b.cpu, expected);
  test::require_identical(out.check_and_fetch(), expected, "add over 10 unmergeable dims");

  test::GuardedOutput copied(sizes, DType::f64, kGpu);  // dense: only the source's layout is strided
  kernels::copy(a.cuda, copied.view());
  Tensor expected_copy = test::empty_tensor(sizes, DType::f64, cpu());
  kernels::copy(a.cpu, expected_copy);
  test::require_identical(copied.check_and_fetch(), expected_copy, "copy with a cast from 10 unmergeable dims");
}
