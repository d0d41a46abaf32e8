// The CPU binary kernels (arithmetic, comparisons, broadcasting, strided operands, backward) and
// where, called directly (no autograd), against hand-computed values.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "duet/kernels/kernels.h"
#include "kernel_test_tensors.h"

using namespace duet;
using namespace duet::kernels;
using namespace duet::kernel_test;
using Catch::Matchers::Contains;

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
template <class T> void check_comparisons() {
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
  REQUIRE_THROWS_WITH(binary(BinaryOp::add, a, wrong, out), Contains("add") && Contains("f32[2]") && Contains("[3]"));
  Tensor wrong_out = empty_tensor(DType::u8, {3});
  REQUIRE_THROWS_WITH(binary(BinaryOp::add, a, a, wrong_out), Contains("add") && Contains("u8[3]"));
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
  check_close(values<double>(gb), {2 * std::log(2.0), 4 * std::log(2.0), 16 * std::log(2.0), 3 * std::log(3.0),
                                   9 * std::log(3.0), 81 * std::log(3.0)});
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
