// The CPU kernel layer, called directly (no autograd), against hand-computed values.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "duet/core/philox.h"
#include "duet/core/storage.h"
#include "duet/core/tensor.h"
#include "duet/kernels/backend.h"
#include "duet/kernels/exp_f32.h"
#include "duet/kernels/cpu/thread_pool.h"
#include "duet/kernels/kernels.h"

using namespace duet;
using namespace duet::kernels;
using Catch::Matchers::Contains;

namespace {

// A contiguous tensor on cpu:0 made without the autograd layer.
Tensor empty_tensor(DType dtype, Shape sizes) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(static_cast<size_t>(numel(sizes)) * element_size(dtype),
                                            duet::cpu());
  impl->strides = contiguous_strides(sizes);
  impl->sizes = std::move(sizes);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

template <class T>
Tensor make(Shape sizes, const std::vector<T>& values) {
  Tensor t = empty_tensor(dtype_of<T>(), std::move(sizes));
  REQUIRE(static_cast<int64_t>(values.size()) == t.numel());
  std::copy(values.begin(), values.end(), t.data<T>());
  return t;
}

// The logical elements of any strided tensor, in row-major order.
template <class T>
std::vector<T> values(const Tensor& t) {
  std::vector<T> out;
  const T* base = t.data<T>();
  const int64_t n = t.numel();
  Shape index(t.sizes().size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d) offset += index[d] * t.strides()[d];
    out.push_back(base[offset]);
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < t.sizes()[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

// A view that swaps the last two dims of a contiguous tensor.
Tensor transposed(const Tensor& t) {
  Shape sizes = t.sizes(), strides = t.strides();
  size_t d = sizes.size();
  std::swap(sizes[d - 1], sizes[d - 2]);
  std::swap(strides[d - 1], strides[d - 2]);
  return t.as_strided(sizes, strides, t.offset());
}

template <class T>
std::vector<T> iota_values(int64_t n, double start = 0, double step = 1) {
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<T>(start + step * static_cast<double>(i));
  return v;
}

template <class T>
void check_close(const std::vector<T>& got, const std::vector<double>& want, double tol = 1e-6) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    if (std::isnan(want[i])) {
      CHECK(std::isnan(static_cast<double>(got[i])));
    } else if (std::isinf(want[i])) {
      CHECK(static_cast<double>(got[i]) == want[i]);
    } else {
      CHECK(static_cast<double>(got[i]) == Approx(want[i]).epsilon(tol).margin(tol));
    }
  }
}

}  // namespace

// ---------------------------------------------------------------- elementwise

TEST_CASE("binary broadcasts [3,1] with [4] to [3,4]", "[kernels]") {
  Tensor a = make<float>({3, 1}, {1, 2, 3});
  Tensor b = make<float>({4}, {10, 20, 30, 40});
  Tensor out = empty_tensor(DType::f32, {3, 4});
  binary(BinaryOp::add, a, b, out);
  CHECK(values<float>(out) == std::vector<float>{11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43});
  binary(BinaryOp::sub, b, a, out);
  CHECK(values<float>(out) == std::vector<float>{9, 19, 29, 39, 8, 18, 28, 38, 7, 17, 27, 37});
}

TEST_CASE("binary reads a transposed view and writes a strided out", "[kernels]") {
  Tensor a = make<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor at = transposed(a);  // [3,2]: 1 4 / 2 5 / 3 6
  REQUIRE_FALSE(at.is_contiguous());
  Tensor b = make<float>({3, 2}, {1, 1, 2, 2, 3, 3});
  Tensor out = empty_tensor(DType::f32, {3, 2});
  binary(BinaryOp::mul, at, b, out);
  CHECK(values<float>(out) == std::vector<float>{1, 4, 4, 10, 9, 18});

  // out is every other element of a [3, 4] buffer.
  Tensor buffer = make<float>({3, 4}, std::vector<float>(12, -1));
  Tensor strided_out = buffer.as_strided({3, 2}, {4, 2}, 0);
  binary(BinaryOp::add, at, b, strided_out);
  CHECK(values<float>(buffer) == std::vector<float>{2, -1, 5, -1, 4, -1, 7, -1, 6, -1, 9, -1});

  // A transposed out ([3,2] viewing a [2,3] buffer) is written in place too.
  Tensor out_buffer = empty_tensor(DType::f32, {2, 3});
  binary(BinaryOp::add, at, b, transposed(out_buffer));
  CHECK(values<float>(out_buffer) == std::vector<float>{2, 4, 6, 5, 7, 9});
}

TEST_CASE("binary runs in place (out aliases an input)", "[kernels]") {
  Tensor a = make<float>({4}, {1, 2, 3, 4});
  Tensor b = make<float>({1}, {10});
  binary(BinaryOp::add, a, b, a);
  CHECK(values<float>(a) == std::vector<float>{11, 12, 13, 14});
}

TEST_CASE("every unary op on a few values", "[kernels]") {
  const std::vector<double> x = {-2.0, -0.5, 0.0, 0.5, 3.0};
  const std::vector<double> positive = {0.25, 1.0, 4.0};
  auto run = [](UnaryOp op, const std::vector<double>& in) {
    Tensor t = make<double>({static_cast<int64_t>(in.size())}, in);
    Tensor out = empty_tensor(DType::f64, t.sizes());
    unary(op, t, out);
    return values<double>(out);
  };
  check_close(run(UnaryOp::neg, x), {2, 0.5, 0, -0.5, -3});
  check_close(run(UnaryOp::abs, x), {2, 0.5, 0, 0.5, 3});
  check_close(run(UnaryOp::relu, x), {0, 0, 0, 0.5, 3});
  check_close(run(UnaryOp::exp, x), {std::exp(-2.0), std::exp(-0.5), 1, std::exp(0.5), std::exp(3.0)});
  check_close(run(UnaryOp::tanh, x), {std::tanh(-2.0), std::tanh(-0.5), 0, std::tanh(0.5), std::tanh(3.0)});
  check_close(run(UnaryOp::sigmoid, x),
              {1 / (1 + std::exp(2.0)), 1 / (1 + std::exp(0.5)), 0.5, 1 / (1 + std::exp(-0.5)),
               1 / (1 + std::exp(-3.0))});
  check_close(run(UnaryOp::log, positive), {std::log(0.25), 0, std::log(4.0)});
  check_close(run(UnaryOp::sqrt, positive), {0.5, 1, 2});

  // Sigmoid never overflows at the extremes (f32).
  Tensor big = make<float>({2}, {-200.0f, 200.0f});
  Tensor big_out = empty_tensor(DType::f32, {2});
  unary(UnaryOp::sigmoid, big, big_out);
  CHECK(values<float>(big_out) == std::vector<float>{0.0f, 1.0f});
  Tensor nan = make<float>({1}, {std::nanf("")});
  unary(UnaryOp::sigmoid, nan, big_out.narrow(0, 0, 1));
  CHECK(std::isnan(values<float>(big_out)[0]));  // a diverging run must stay visible
}

TEST_CASE("exp_f32 is within 2 ulp of exp over the float range, 0 and inf beyond", "[kernels]") {
  double worst = 0;
  for (double x = -87.0; x < 88.3; x += 0.001) {
    const float xf = static_cast<float>(x);
    const double want = std::exp(static_cast<double>(xf));
    worst = std::max(worst, std::fabs(kernels::exp_f32(xf) - want) / want);
  }
  CHECK(worst < 2 * 1.2e-7);  // an ulp is at most 2^-23 (1.2e-7) relative
  CHECK(kernels::exp_f32(0.0f) == 1.0f);
  CHECK(kernels::exp_f32(-100.0f) == 0.0f);
  CHECK(kernels::exp_f32(100.0f) == std::numeric_limits<float>::infinity());
  CHECK(std::isnan(kernels::exp_f32(std::nanf(""))));
}

TEST_CASE("neg and abs take integer dtypes, math ops need floating", "[kernels]") {
  Tensor i = make<int64_t>({3}, {-3, 0, 5});
  Tensor i_out = empty_tensor(DType::i64, {3});
  unary(UnaryOp::abs, i, i_out);
  CHECK(values<int64_t>(i_out) == std::vector<int64_t>{3, 0, 5});
  unary(UnaryOp::neg, i, i_out);
  CHECK(values<int64_t>(i_out) == std::vector<int64_t>{3, 0, -5});
  Tensor u = make<uint8_t>({2}, {0, 7});
  Tensor u_out = empty_tensor(DType::u8, {2});
  unary(UnaryOp::abs, u, u_out);
  CHECK(values<uint8_t>(u_out) == std::vector<uint8_t>{0, 7});
  REQUIRE_THROWS_WITH(unary(UnaryOp::exp, i, i_out), Contains("exp") && Contains("i64"));
}

TEST_CASE("every arithmetic binary op, f32 and i64", "[kernels]") {
  Tensor a = make<float>({4}, {1, -2, 3, 2});
  Tensor b = make<float>({4}, {2, 4, 3, 0.5f});
  Tensor out = empty_tensor(DType::f32, {4});
  auto run = [&](BinaryOp op) {
    binary(op, a, b, out);
    return values<float>(out);
  };
  CHECK(run(BinaryOp::add) == std::vector<float>{3, 2, 6, 2.5f});
  CHECK(run(BinaryOp::sub) == std::vector<float>{-1, -6, 0, 1.5f});
  CHECK(run(BinaryOp::mul) == std::vector<float>{2, -8, 9, 1});
  CHECK(run(BinaryOp::div) == std::vector<float>{0.5f, -0.5f, 1, 4});
  check_close(run(BinaryOp::pow), {1, 16, 27, std::sqrt(2.0)});
  CHECK(run(BinaryOp::maximum) == std::vector<float>{2, 4, 3, 2});
  CHECK(run(BinaryOp::minimum) == std::vector<float>{1, -2, 3, 0.5f});

  Tensor ia = make<int64_t>({3}, {7, -7, 4});
  Tensor ib = make<int64_t>({3}, {2, 2, 5});
  Tensor iout = empty_tensor(DType::i64, {3});
  binary(BinaryOp::div, ia, ib, iout);
  CHECK(values<int64_t>(iout) == std::vector<int64_t>{3, -3, 0});  // C++ truncation
  binary(BinaryOp::mul, ia, ib, iout);
  CHECK(values<int64_t>(iout) == std::vector<int64_t>{14, -14, 20});
  REQUIRE_THROWS_WITH(binary(BinaryOp::pow, ia, ib, iout), Contains("pow") && Contains("i64"));
  Tensor zero = make<int64_t>({1}, {0});
  REQUIRE_THROWS_WITH(binary(BinaryOp::div, ia, zero, iout), Contains("division by zero"));
}

namespace {
template <class T>
void check_comparisons() {
  Tensor a = make<T>({3}, {1, 2, 3});
  Tensor b = make<T>({1}, {2});  // broadcast
  Tensor out = empty_tensor(DType::u8, {3});
  auto run = [&](BinaryOp op) {
    binary(op, a, b, out);
    return values<uint8_t>(out);
  };
  using V = std::vector<uint8_t>;
  INFO("dtype " << dtype_name(dtype_of<T>()));
  CHECK(run(BinaryOp::eq) == V{0, 1, 0});
  CHECK(run(BinaryOp::ne) == V{1, 0, 1});
  CHECK(run(BinaryOp::lt) == V{1, 0, 0});
  CHECK(run(BinaryOp::le) == V{1, 1, 0});
  CHECK(run(BinaryOp::gt) == V{0, 0, 1});
  CHECK(run(BinaryOp::ge) == V{0, 1, 1});
}
}  // namespace

TEST_CASE("comparisons write u8 for f32, i64 and u8 inputs", "[kernels]") {
  check_comparisons<float>();
  check_comparisons<int64_t>();
  check_comparisons<uint8_t>();
}

TEST_CASE("mismatched dtypes and shapes are clear errors", "[kernels][errors]") {
  Tensor a = make<float>({3}, {1, 2, 3});
  Tensor d = make<double>({3}, {1, 2, 3});
  Tensor out = empty_tensor(DType::f32, {3});
  REQUIRE_THROWS_WITH(binary(BinaryOp::add, a, d, out), Contains("add") && Contains("f64[3]"));
  Tensor wrong = make<float>({2}, {1, 2});
  REQUIRE_THROWS_WITH(binary(BinaryOp::add, a, wrong, out),
                      Contains("add") && Contains("f32[2]") && Contains("[3]"));
  Tensor wrong_out = empty_tensor(DType::u8, {3});
  REQUIRE_THROWS_WITH(binary(BinaryOp::add, a, a, wrong_out), Contains("add") && Contains("u8[3]"));
}

TEST_CASE("unary_backward uses x or y as each op needs", "[kernels]") {
  Tensor x = make<double>({3}, {-1.0, 0.5, 2.0});
  Tensor g = make<double>({3}, {1.0, 2.0, 3.0});
  Tensor y = empty_tensor(DType::f64, {3});
  Tensor gx = empty_tensor(DType::f64, {3});
  auto grad_of = [&](UnaryOp op) {
    unary(op, x, y);
    unary_backward(op, g, x, y, gx);
    return values<double>(gx);
  };
  check_close(grad_of(UnaryOp::neg), {-1, -2, -3});
  check_close(grad_of(UnaryOp::relu), {0, 2, 3});
  check_close(grad_of(UnaryOp::abs), {-1, 2, 3});
  check_close(grad_of(UnaryOp::exp), {std::exp(-1.0), 2 * std::exp(0.5), 3 * std::exp(2.0)});
  double t1 = std::tanh(-1.0), t2 = std::tanh(0.5), t3 = std::tanh(2.0);
  check_close(grad_of(UnaryOp::tanh), {1 - t1 * t1, 2 * (1 - t2 * t2), 3 * (1 - t3 * t3)});
  auto s = [](double v) { return 1 / (1 + std::exp(-v)); };
  check_close(grad_of(UnaryOp::sigmoid),
              {s(-1) * (1 - s(-1)), 2 * s(0.5) * (1 - s(0.5)), 3 * s(2) * (1 - s(2))});

  Tensor p = make<double>({2}, {0.25, 4.0});
  Tensor gp = make<double>({2}, {1.0, 1.0});
  Tensor yp = empty_tensor(DType::f64, {2});
  Tensor gxp = empty_tensor(DType::f64, {2});
  unary(UnaryOp::log, p, yp);
  unary_backward(UnaryOp::log, gp, p, yp, gxp);
  check_close(values<double>(gxp), {4, 0.25});
  unary(UnaryOp::sqrt, p, yp);
  unary_backward(UnaryOp::sqrt, gp, Tensor(), yp, gxp);  // needs only y
  check_close(values<double>(gxp), {1.0, 0.25});
  unary_backward(UnaryOp::sqrt, gp, p, Tensor(), gxp);  // y recomputed from x
  check_close(values<double>(gxp), {1.0, 0.25});
  REQUIRE_THROWS_WITH(unary_backward(UnaryOp::relu, gp, Tensor(), yp, gxp), Contains("relu"));
}

TEST_CASE("binary_backward writes both partials at out's shape, and either may be skipped", "[kernels]") {
  Tensor a = make<double>({2, 1}, {2.0, 3.0});
  Tensor b = make<double>({3}, {1.0, 2.0, 4.0});
  Tensor g = make<double>({2, 3}, {1, 1, 1, 1, 1, 1});
  Tensor out = empty_tensor(DType::f64, {2, 3});
  Tensor ga = empty_tensor(DType::f64, {2, 3});
  Tensor gb = empty_tensor(DType::f64, {2, 3});

  binary(BinaryOp::mul, a, b, out);
  binary_backward(BinaryOp::mul, g, a, b, out, ga, gb);
  check_close(values<double>(ga), {1, 2, 4, 1, 2, 4});
  check_close(values<double>(gb), {2, 2, 2, 3, 3, 3});

  binary(BinaryOp::div, a, b, out);
  binary_backward(BinaryOp::div, g, a, b, out, ga, gb);
  check_close(values<double>(ga), {1, 0.5, 0.25, 1, 0.5, 0.25});
  check_close(values<double>(gb), {-2, -0.5, -0.125, -3, -0.75, -0.1875});

  binary(BinaryOp::pow, a, b, out);
  binary_backward(BinaryOp::pow, g, a, b, Tensor(), Tensor(), gb);  // out recomputed
  check_close(values<double>(gb), {2 * std::log(2.0), 4 * std::log(2.0), 16 * std::log(2.0),
                                   3 * std::log(3.0), 9 * std::log(3.0), 81 * std::log(3.0)});
  binary_backward(BinaryOp::pow, g, a, b, out, ga, Tensor());
  check_close(values<double>(ga), {1, 4, 32, 1, 6, 108});

  Tensor same = make<double>({2}, {1.0, 5.0});
  Tensor other = make<double>({2}, {1.0, 2.0});
  Tensor g2 = make<double>({2}, {1.0, 1.0});
  Tensor o2 = empty_tensor(DType::f64, {2}), ga2 = empty_tensor(DType::f64, {2}), gb2 = empty_tensor(DType::f64, {2});
  binary(BinaryOp::maximum, same, other, o2);
  binary_backward(BinaryOp::maximum, g2, same, other, o2, ga2, gb2);
  check_close(values<double>(ga2), {0.5, 1});  // a tie splits the gradient
  check_close(values<double>(gb2), {0.5, 0});
  binary_backward(BinaryOp::sub, g2, same, other, Tensor(), ga2, gb2);
  check_close(values<double>(ga2), {1, 1});
  check_close(values<double>(gb2), {-1, -1});
}

TEST_CASE("where picks a or b per broadcast u8 condition", "[kernels]") {
  Tensor cond = make<uint8_t>({3, 1}, {1, 0, 1});
  Tensor a = make<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor b = make<float>({1}, {-1});
  Tensor out = empty_tensor(DType::f32, {3, 2});
  where(cond, a, b, out);
  CHECK(values<float>(out) == std::vector<float>{1, 2, -1, -1, 5, 6});
}

TEST_CASE("large broadcast and strided elementwise ops split over threads correctly", "[kernels]") {
  const int64_t rows = 301, cols = 517;  // odd sizes: chunks end mid-row
  Tensor a = make<float>({cols, rows}, iota_values<float>(rows * cols));
  Tensor at = transposed(a);  // [rows, cols], at[r][c] = c * rows + r
  Tensor b = make<float>({cols}, iota_values<float>(cols, 0, 0.5));
  Tensor out = empty_tensor(DType::f32, {rows, cols});
  binary(BinaryOp::add, at, b, out);
  const float* o = out.data<float>();
  bool all_match = true;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      all_match &= o[r * cols + c] == static_cast<float>(c * rows + r) + 0.5f * static_cast<float>(c);
  CHECK(all_match);
}

// ---------------------------------------------------------------- copy, fill, arange

TEST_CASE("copy casts dtypes and broadcasts", "[kernels]") {
  Tensor f = make<float>({4}, {-1.7f, 0.2f, 2.9f, 300.0f});
  Tensor i = empty_tensor(DType::i64, {4});
  copy(f, i);
  CHECK(values<int64_t>(i) == std::vector<int64_t>{-1, 0, 2, 300});  // truncation toward zero
  Tensor d = empty_tensor(DType::f64, {4});
  copy(i, d);
  CHECK(values<double>(d) == std::vector<double>{-1, 0, 2, 300});
  Tensor u = make<uint8_t>({3}, {0, 128, 255});
  Tensor uf = empty_tensor(DType::f32, {3});
  copy(u, uf);
  CHECK(values<float>(uf) == std::vector<float>{0, 128, 255});
  Tensor nan_in = make<float>({1}, {std::numeric_limits<float>::quiet_NaN()});
  Tensor nan_out = empty_tensor(DType::i64, {1});
  copy(nan_in, nan_out);  // defined (0), never undefined behaviour
  CHECK(values<int64_t>(nan_out) == std::vector<int64_t>{0});

  Tensor row = make<float>({3}, {1, 2, 3});
  Tensor grid = empty_tensor(DType::f32, {2, 3});
  copy(row, grid);
  CHECK(values<float>(grid) == std::vector<float>{1, 2, 3, 1, 2, 3});
  Tensor src = make<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor dst = empty_tensor(DType::f32, {3, 2});
  copy(transposed(src), dst);  // materialises a transpose
  CHECK(values<float>(dst) == std::vector<float>{1, 4, 2, 5, 3, 6});
}

TEST_CASE("copy between two logical CPU devices is a plain copy", "[kernels]") {
  Tensor src = make<float>({2}, {1, 2});
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(2 * sizeof(float), duet::cpu(1));
  impl->sizes = {2};
  impl->strides = {1};
  Tensor dst(impl);
  copy(src, dst);
  CHECK(values<float>(dst) == std::vector<float>{1, 2});
}

TEST_CASE("fill and arange", "[kernels]") {
  Tensor t = empty_tensor(DType::f32, {2, 3});
  fill(t, 2.5);
  CHECK(values<float>(t) == std::vector<float>(6, 2.5f));
  fill(t.as_strided({2}, {3}, 1), -1.0);  // a strided column
  CHECK(values<float>(t) == std::vector<float>{2.5f, -1, 2.5f, 2.5f, -1, 2.5f});
  Tensor u = empty_tensor(DType::u8, {3});
  fill(u, 7);
  CHECK(values<uint8_t>(u) == std::vector<uint8_t>{7, 7, 7});

  Tensor r = empty_tensor(DType::f64, {5});
  arange(r, 1.0, 0.5);
  CHECK(values<double>(r) == std::vector<double>{1, 1.5, 2, 2.5, 3});
  Tensor ri = empty_tensor(DType::i64, {4});
  arange(ri, 10, -3);
  CHECK(values<int64_t>(ri) == std::vector<int64_t>{10, 7, 4, 1});
}

// ---------------------------------------------------------------- random

TEST_CASE("uniform and normal follow core/philox.h element by element", "[kernels]") {
  const int64_t n = 10001;  // not a multiple of 4: partial Philox blocks at both ends of chunks
  Tensor u = empty_tensor(DType::f32, {n});
  uniform(u, 42, 7, -2.0, 3.0);
  const float* pu = u.data<float>();
  bool match = true, in_range = true;
  for (int64_t i = 0; i < n; ++i) {
    auto want = static_cast<float>(-2.0 + 5.0 * philox::uniform(philox::bits(42, 7, static_cast<uint64_t>(i))));
    match &= pu[i] == want;
    in_range &= pu[i] >= -2.0f && pu[i] < 3.0f;
  }
  CHECK(match);
  CHECK(in_range);

  Tensor g = empty_tensor(DType::f64, {n});
  normal(g, 42, 7, 1.0, 2.0);
  const double* pg = g.data<double>();
  match = true;
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    match &= pg[i] == philox::normal(42, 7, static_cast<uint64_t>(i)) * 2.0 + 1.0;
    sum += pg[i];
    sq += (pg[i] - 1.0) * (pg[i] - 1.0);
  }
  CHECK(match);
  CHECK(sum / n == Approx(1.0).margin(0.1));
  CHECK(std::sqrt(sq / n) == Approx(2.0).margin(0.1));
}

TEST_CASE("philox draws are deterministic and depend on seed and offset", "[kernels]") {
  auto draw = [](uint64_t seed, uint64_t offset) {
    Tensor t = empty_tensor(DType::f32, {64});
    uniform(t, seed, offset, 0.0, 1.0);
    return values<float>(t);
  };
  CHECK(draw(1, 0) == draw(1, 0));
  CHECK(draw(1, 0) != draw(1, 16));
  CHECK(draw(1, 0) != draw(2, 0));
  // Block `offset` + j holds elements 4j..4j+3: offset 1 is the stream shifted by 4.
  std::vector<float> base = draw(1, 0), shifted = draw(1, 1);
  CHECK(std::equal(shifted.begin(), shifted.end() - 4, base.begin() + 4));
  Tensor strided = empty_tensor(DType::f32, {4, 2});
  REQUIRE_THROWS_WITH(uniform(transposed(strided), 1, 0, 0, 1), Contains("contiguous"));
}

// ---------------------------------------------------------------- reductions

TEST_CASE("sum and mean over various dims, keepdim layout", "[kernels]") {
  Tensor x = make<float>({2, 3, 4}, iota_values<float>(24));
  auto reduce_to = [&](ReduceOp op, const Tensor& in, std::vector<int64_t> dims, Shape out_sizes) {
    Tensor out = empty_tensor(DType::f32, std::move(out_sizes));
    reduce(op, in, dims, out);
    return values<float>(out);
  };
  CHECK(reduce_to(ReduceOp::sum, x, {}, {1, 1, 1}) == std::vector<float>{276});
  CHECK(reduce_to(ReduceOp::sum, x, {2}, {2, 3, 1}) == std::vector<float>{6, 22, 38, 54, 70, 86});
  CHECK(reduce_to(ReduceOp::sum, x, {0}, {1, 3, 4}) ==
        std::vector<float>{12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34});
  CHECK(reduce_to(ReduceOp::sum, x, {0, 2}, {1, 3, 1}) == std::vector<float>{60, 92, 124});
  CHECK(reduce_to(ReduceOp::mean, x, {1}, {2, 1, 4}) == std::vector<float>{4, 5, 6, 7, 16, 17, 18, 19});
  CHECK(reduce_to(ReduceOp::mean, x, {}, {1, 1, 1}) == std::vector<float>{11.5f});

  // Non-contiguous input: the transpose of the last two dims, [2, 4, 3].
  Tensor xt = transposed(x);
  CHECK(reduce_to(ReduceOp::sum, xt, {2}, {2, 4, 1}) == std::vector<float>{12, 15, 18, 21, 48, 51, 54, 57});
  CHECK(reduce_to(ReduceOp::sum, xt, {1}, {2, 1, 3}) == std::vector<float>{6, 22, 38, 54, 70, 86});

  // Integer sums accumulate in int64.
  Tensor i = make<int64_t>({2, 2}, {1, 2, 3, 4});
  Tensor iout = empty_tensor(DType::i64, {1, 2});
  reduce(ReduceOp::sum, i, {0}, iout);
  CHECK(values<int64_t>(iout) == std::vector<int64_t>{4, 6});
  Tensor bad = empty_tensor(DType::f32, {2, 3, 4});
  REQUIRE_THROWS_WITH(reduce(ReduceOp::sum, x, {1}, bad), Contains("sum") && Contains("f32[2, 3, 4]"));
}

TEST_CASE("max, min and argmax, with ties taking the first index", "[kernels]") {
  Tensor x = make<float>({2, 4}, {3, 7, 7, 1, -5, -2, -2, -9});
  Tensor out = empty_tensor(DType::f32, {2, 1});
  reduce(ReduceOp::max, x, {1}, out);
  CHECK(values<float>(out) == std::vector<float>{7, -2});
  reduce(ReduceOp::min, x, {1}, out);
  CHECK(values<float>(out) == std::vector<float>{1, -9});
  Tensor idx = empty_tensor(DType::i64, {2, 1});
  reduce(ReduceOp::argmax, x, {1}, idx);
  CHECK(values<int64_t>(idx) == std::vector<int64_t>{1, 1});
  Tensor idx0 = empty_tensor(DType::i64, {1, 4});
  reduce(ReduceOp::argmax, x, {0}, idx0);
  CHECK(values<int64_t>(idx0) == std::vector<int64_t>{0, 0, 0, 0});
  Tensor tie = make<float>({1, 3}, {2, 2, 2});
  Tensor tie_idx = empty_tensor(DType::i64, {1, 1});
  reduce(ReduceOp::argmax, tie, {1}, tie_idx);
  CHECK(values<int64_t>(tie_idx) == std::vector<int64_t>{0});
  REQUIRE_THROWS_WITH(reduce(ReduceOp::argmax, x, {0, 1}, tie_idx), Contains("exactly one dim"));

  // Infinities come back as themselves, not as the largest finite float.
  const float inf = std::numeric_limits<float>::infinity();
  Tensor infinite = make<float>({2, 2}, {-inf, -inf, inf, inf});
  reduce(ReduceOp::max, infinite, {1}, out);
  CHECK(values<float>(out) == std::vector<float>{-inf, inf});
  reduce(ReduceOp::min, infinite, {1}, out);
  CHECK(values<float>(out) == std::vector<float>{-inf, inf});

  // A long tied row split over threads still reports the first index.
  const int64_t n = 300000;
  std::vector<float> v(static_cast<size_t>(n), 1.0f);
  v[123457] = 5.0f;
  v[250000] = 5.0f;
  Tensor big = make<float>({1, n}, v);
  reduce(ReduceOp::argmax, big, {1}, tie_idx);
  CHECK(values<int64_t>(tie_idx) == std::vector<int64_t>{123457});
}

TEST_CASE("reducing outer dims of a wide input (column tiles) matches a naive loop", "[kernels]") {
  const int64_t rows = 777, cols = 1300;  // several tiles, the last one partial
  std::vector<float> v(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      v[static_cast<size_t>(r * cols + c)] = static_cast<float>((r * 37 + c * 11) % 101) - 50.0f;
  Tensor x = make<float>({rows, cols}, v);
  Tensor sums = empty_tensor(DType::f32, {1, cols}), maxes = empty_tensor(DType::f32, {1, cols});
  Tensor idx = empty_tensor(DType::i64, {1, cols});
  reduce(ReduceOp::sum, x, {0}, sums);
  reduce(ReduceOp::max, x, {0}, maxes);
  reduce(ReduceOp::argmax, x, {0}, idx);
  bool ok = true;
  for (int64_t c = 0; c < cols; ++c) {
    double s = 0;
    float best = v[static_cast<size_t>(c)];
    int64_t best_r = 0;
    for (int64_t r = 0; r < rows; ++r) {
      float e = v[static_cast<size_t>(r * cols + c)];
      s += e;
      if (e > best) {
        best = e;
        best_r = r;
      }
    }
    ok &= sums.data<float>()[c] == static_cast<float>(s) && maxes.data<float>()[c] == best &&
          idx.data<int64_t>()[c] == best_r;
  }
  CHECK(ok);

  // [2, 3, 4] -> mean over dim 0 into a strided out (a column of a wider buffer).
  Tensor y = make<double>({2, 3, 4}, iota_values<double>(24));
  Tensor buffer = make<double>({3, 8}, std::vector<double>(24, -1));
  Tensor out = buffer.as_strided({1, 3, 4}, {0, 8, 2}, 0);
  reduce(ReduceOp::mean, y, {0}, out);
  CHECK(values<double>(out) == std::vector<double>{6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17});
  CHECK(buffer.data<double>()[1] == -1);
}

TEST_CASE("logsumexp is stable for large values and -inf rows", "[kernels]") {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor x = make<float>({3, 2}, {1000, 1000, -inf, -inf, 0, std::log(3.0f)});
  Tensor out = empty_tensor(DType::f32, {3, 1});
  reduce(ReduceOp::logsumexp, x, {1}, out);
  check_close(values<float>(out), {1000 + std::log(2.0), -std::numeric_limits<double>::infinity(), std::log(4.0)});
  Tensor ints = make<int64_t>({2}, {1, 2});
  Tensor iout = empty_tensor(DType::i64, {1});
  REQUIRE_THROWS_WITH(reduce(ReduceOp::logsumexp, ints, {0}, iout), Contains("logsumexp") && Contains("i64"));
}

TEST_CASE("logsumexp is NaN wherever a NaN is, even beside an infinity", "[kernels]") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = make<float>({4, 2}, {nan, -inf, inf, nan, -inf, nan, inf, 1});
  Tensor out = empty_tensor(DType::f32, {4, 1});
  reduce(ReduceOp::logsumexp, x, {1}, out);
  const std::vector<float> got = values<float>(out);
  CHECK(std::isnan(got[0]));
  CHECK(std::isnan(got[1]));
  CHECK(std::isnan(got[2]));
  CHECK(got[3] == inf);
}

TEST_CASE("a large full sum is split over threads and stays accurate", "[kernels]") {
  const int64_t n = 1 << 20;
  Tensor x = make<float>({n}, std::vector<float>(static_cast<size_t>(n), 0.1f));
  Tensor out = empty_tensor(DType::f32, {1});
  reduce(ReduceOp::sum, x, {}, out);
  CHECK(values<float>(out)[0] == Approx(static_cast<double>(0.1f) * n).epsilon(1e-7));
  reduce(ReduceOp::mean, x, {0}, out);
  CHECK(values<float>(out)[0] == Approx(0.1f).epsilon(1e-7));
}

// ---------------------------------------------------------------- matmul

namespace {

// [batch, m, n] = [batch, m, k] @ [batch, k, n] by the textbook triple loop, over strided views.
std::vector<double> naive_matmul(const Tensor& a, const Tensor& b) {
  std::vector<double> av = values<double>(a), bv = values<double>(b);
  const size_t r = a.sizes().size();
  int64_t batch = r == 3 ? a.sizes()[0] : 1, m = a.sizes()[r - 2], k = a.sizes()[r - 1], n = b.sizes()[r - 1];
  std::vector<double> out(static_cast<size_t>(batch * m * n), 0.0);
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q) s += av[static_cast<size_t>((p * m + i) * k + q)] * bv[static_cast<size_t>((p * k + q) * n + j)];
        out[static_cast<size_t>((p * m + i) * n + j)] = s;
      }
  return out;
}

Tensor random_f64(Shape sizes, uint64_t seed) {
  Tensor t = empty_tensor(DType::f64, std::move(sizes));
  uniform(t, seed, 0, -1.0, 1.0);
  return t;
}

}  // namespace

TEST_CASE("matmul 2-D against hand values and a naive loop", "[kernels]") {
  Tensor a = make<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = make<float>({3, 2}, {7, 8, 9, 10, 11, 12});
  Tensor out = empty_tensor(DType::f32, {2, 2});
  matmul(a, b, out);
  CHECK(values<float>(out) == std::vector<float>{58, 64, 139, 154});

  // Transposed operands and a transposed out, each read or written without a copy.
  Tensor at_buf = random_f64({5, 4}, 1), bt_buf = random_f64({6, 5}, 2);
  Tensor at = transposed(at_buf), bt = transposed(bt_buf);  // [4,5] and [5,6]
  Tensor out_buf = empty_tensor(DType::f64, {6, 4});
  matmul(at, bt, transposed(out_buf));
  check_close(values<double>(transposed(out_buf)), naive_matmul(at, bt), 1e-12);

  // A layout BLAS cannot read (no unit stride) goes through a contiguous copy.
  Tensor wide = random_f64({4, 10}, 3);
  Tensor every_other = wide.as_strided({4, 5}, {10, 2}, 0);
  Tensor b2 = random_f64({5, 3}, 4);
  Tensor o2 = empty_tensor(DType::f64, {4, 3});
  matmul(every_other, b2, o2);
  check_close(values<double>(o2), naive_matmul(every_other, b2), 1e-12);
  Tensor o2_buf = empty_tensor(DType::f64, {4, 6});
  matmul(every_other, b2, o2_buf.as_strided({4, 3}, {6, 2}, 1));  // strided out: copied back
  check_close(values<double>(o2_buf.as_strided({4, 3}, {6, 2}, 1)), naive_matmul(every_other, b2), 1e-12);
}

TEST_CASE("matmul splits a large GEMM into row blocks", "[kernels]") {
  Tensor a = random_f64({203, 64}, 5), b = random_f64({64, 97}, 6);
  Tensor out = empty_tensor(DType::f64, {203, 97});
  matmul(a, b, out);
  check_close(values<double>(out), naive_matmul(a, b), 1e-12);
  Tensor out_t = empty_tensor(DType::f64, {97, 203});
  matmul(a, b, transposed(out_t));  // column-major out: split over its columns
  check_close(values<double>(transposed(out_t)), naive_matmul(a, b), 1e-12);
}

TEST_CASE("batched matmul, with transposed and broadcast operands", "[kernels]") {
  Tensor a = random_f64({3, 4, 5}, 7), b = random_f64({3, 5, 2}, 8);
  Tensor out = empty_tensor(DType::f64, {3, 4, 2});
  matmul(a, b, out);
  check_close(values<double>(out), naive_matmul(a, b), 1e-12);

  Tensor bt_buf = random_f64({3, 2, 5}, 9);
  matmul(a, transposed(bt_buf), out);
  check_close(values<double>(out), naive_matmul(a, transposed(bt_buf)), 1e-12);

  Tensor shared = random_f64({5, 2}, 10);  // one b for every batch item (batch stride 0)
  Tensor expanded = shared.as_strided({3, 5, 2}, {0, 2, 1}, 0);
  matmul(a, expanded, out);
  check_close(values<double>(out), naive_matmul(a, expanded), 1e-12);

  Tensor f = make<float>({1, 1, 2}, {1, 2}), g = make<float>({1, 2, 1}, {3, 4});
  Tensor fo = empty_tensor(DType::f32, {1, 1, 1});
  matmul(f, g, fo);
  CHECK(values<float>(fo) == std::vector<float>{11});
  Tensor i = make<int64_t>({1, 1}, {1});
  REQUIRE_THROWS_WITH(matmul(i, i, empty_tensor(DType::i64, {1, 1})), Contains("matmul"));
  REQUIRE_THROWS_WITH(matmul(a, a, out), Contains("matmul") && Contains("f64[3, 4, 5]"));
}

TEST_CASE("matmul with k = 0 writes zeros", "[kernels]") {
  Tensor a = empty_tensor(DType::f32, {2, 0}), b = empty_tensor(DType::f32, {0, 3});
  Tensor out = make<float>({2, 3}, std::vector<float>(6, 9));
  matmul(a, b, out);
  CHECK(values<float>(out) == std::vector<float>(6, 0));
}

// ---------------------------------------------------------------- dispatch and threads

TEST_CASE("dispatch names ops and reports a missing CUDA backend", "[kernels]") {
  CHECK(std::string(name(UnaryOp::sigmoid)) == "sigmoid");
  CHECK(std::string(name(BinaryOp::ge)) == "ge");
  CHECK(std::string(name(ReduceOp::logsumexp)) == "logsumexp");
  CHECK(&backend_for(duet::cpu(), "add") == &cpu_backend());
  CHECK(&backend_for(duet::cpu(1), "add") == &cpu_backend());  // one table for every logical CPU device
#ifndef DUET_HAS_CUDA
  REQUIRE_THROWS_WITH(backend_for(cuda_device(0), "add"), Contains("add on cuda:0: duet was built without CUDA"));
#endif
}

TEST_CASE("the thread pool covers a range once, runs nested loops inline, rethrows", "[kernels]") {
  const int saved = num_threads();
  set_num_threads(4);  // more threads than cores is fine for correctness
  CHECK(num_threads() == 4);
  const int64_t n = 100003;
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  std::atomic<int> nested_inline{0};
  cpu::parallel_for(n, 1000, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)]++;
    cpu::parallel_for(10000, 1, [&](int64_t b, int64_t e) {
      if (b == 0 && e == 10000) nested_inline++;
    });
  });
  bool once = true;
  for (auto& h : hits) once &= h.load() == 1;
  CHECK(once);
  CHECK(nested_inline.load() >= 2);  // one per chunk, each run inline
  REQUIRE_THROWS_WITH(cpu::parallel_for(n, 10, [](int64_t begin, int64_t) {
                        if (begin > 0) DUET_FAIL("chunk failed");
                      }),
                      Contains("chunk failed"));
  REQUIRE_THROWS(set_num_threads(0));
  set_num_threads(saved);
  CHECK(num_threads() == saved);
}
