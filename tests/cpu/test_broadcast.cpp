// NumPy broadcasting in the elementwise ops, with hand-computed results.
#include <catch2/catch.hpp>

#include "duet/duet.h"

using namespace duet;
using Catch::Matchers::Contains;

namespace {
using Values = std::vector<float>;
}

TEST_CASE("a row and a column broadcast to a matrix", "[broadcast]") {
  Tensor column = from_vector<float>({1, 2, 3}, {3, 1});
  Tensor row = from_vector<float>({10, 20}, {2});
  Tensor sum = column + row;
  CHECK(sum.sizes() == Shape{3, 2});
  CHECK(sum.to_vector<float>() == Values{11, 21, 12, 22, 13, 23});
  CHECK((row - column).to_vector<float>() == Values{9, 19, 8, 18, 7, 17});
  CHECK((column * row).to_vector<float>() == Values{10, 20, 20, 40, 30, 60});
}

TEST_CASE("new leading dims and size-1 dims broadcast together", "[broadcast]") {
  Tensor a = arange(6).view({2, 1, 3});  // [[[0, 1, 2]], [[3, 4, 5]]]
  Tensor b = from_vector<float>({1, -1}, {2, 1});
  Tensor c = a * b;
  CHECK(c.sizes() == Shape{2, 2, 3});
  CHECK(c.to_vector<float>() == Values{0, 1, 2, -0.0f, -1, -2, 3, 4, 5, -3, -4, -5});
}

TEST_CASE("scalars and 0-d tensors broadcast to anything", "[broadcast]") {
  Tensor x = from_vector<float>({1, 2, 4}, {3});
  CHECK((x + 1.0).to_vector<float>() == Values{2, 3, 5});
  CHECK((1.0 - x).to_vector<float>() == Values{0, -1, -3});
  CHECK((x * 0.5).to_vector<float>() == Values{0.5f, 1, 2});
  CHECK((8.0 / x).to_vector<float>() == Values{8, 4, 2});
  CHECK((x / 2.0).to_vector<float>() == Values{0.5f, 1, 2});
  CHECK(pow(x, 2.0).to_vector<float>() == Values{1, 4, 16});
  Tensor zero_d = scalar_like(3, x);
  CHECK(zero_d.dim() == 0);
  CHECK((x + zero_d).sizes() == Shape{3});
  CHECK((zero_d - x).to_vector<float>() == Values{2, 1, -1});
  Tensor both = zero_d * zero_d;  // two 0-d tensors give a 0-d tensor
  CHECK(both.dim() == 0);
  CHECK(both.item<float>() == 9);
  // A scalar takes the tensor's dtype.
  Tensor i = from_vector<int64_t>({1, 2}, {2});
  Tensor doubled = i * 2.0;
  CHECK(doubled.dtype() == DType::i64);
  CHECK(doubled.to_vector<int64_t>() == std::vector<int64_t>{2, 4});
}

TEST_CASE("maximum, minimum and comparisons broadcast", "[broadcast]") {
  Tensor a = from_vector<float>({1, 5, 3}, {3});
  Tensor b = from_vector<float>({2, 4}, {2, 1});
  CHECK(maximum(a, b).to_vector<float>() == Values{2, 5, 3, 4, 5, 4});
  CHECK(minimum(a, b).to_vector<float>() == Values{1, 2, 2, 1, 4, 3});
  Tensor gt_b = gt(a, b);
  CHECK(gt_b.dtype() == DType::u8);
  CHECK(gt_b.sizes() == Shape{2, 3});
  CHECK(gt_b.to_vector<uint8_t>() == std::vector<uint8_t>{0, 1, 1, 0, 1, 0});
  CHECK(eq(a, scalar_like(5, a)).to_vector<uint8_t>() == std::vector<uint8_t>{0, 1, 0});
  CHECK(le(a, scalar_like(3, a)).to_vector<uint8_t>() == std::vector<uint8_t>{1, 0, 1});
  CHECK(ne(a, scalar_like(3, a)).to_vector<uint8_t>() == std::vector<uint8_t>{1, 1, 0});
  CHECK(lt(a, scalar_like(3, a)).to_vector<uint8_t>() == std::vector<uint8_t>{1, 0, 0});
  CHECK(ge(a, scalar_like(3, a)).to_vector<uint8_t>() == std::vector<uint8_t>{0, 1, 1});
}

TEST_CASE("comparisons are not recorded", "[broadcast][autograd]") {
  Tensor a = from_vector<float>({1, 2}, {2});
  a.requires_grad_();
  Tensor c = lt(a, scalar_like(1.5, a));
  CHECK_FALSE(c.requires_grad());
  CHECK(c.grad_fn() == nullptr);
}

TEST_CASE("where broadcasts its condition and both branches", "[broadcast]") {
  Tensor cond = from_vector<uint8_t>({1, 0, 1}, {3});
  Tensor a = from_vector<float>({1, 2}, {2, 1});
  Tensor b = scalar_like(-1, a);
  Tensor w = where(cond, a, b);
  CHECK(w.sizes() == Shape{2, 3});
  CHECK(w.to_vector<float>() == Values{1, -1, 1, 2, -1, 2});
}

TEST_CASE("broadcasting over non-contiguous operands", "[broadcast]") {
  Tensor m = arange(6).view({2, 3}).t();  // [[0, 3], [1, 4], [2, 5]]
  Tensor row = from_vector<float>({100, 200}, {2});
  CHECK((m + row).to_vector<float>() == Values{100, 203, 101, 204, 102, 205});
}

TEST_CASE("incompatible shapes name the op and both shapes", "[broadcast][errors]") {
  Tensor a = zeros({2, 3});
  Tensor b = zeros({4});
  REQUIRE_THROWS_WITH(a + b,
                      Contains("add") && Contains("[2, 3]") && Contains("[4]") && Contains("cannot be broadcast"));
  REQUIRE_THROWS_WITH(mul(zeros({2, 3, 4}), zeros({3, 3})), Contains("mul") && Contains("[2, 3, 4]"));
  REQUIRE_THROWS_WITH(where(from_vector<uint8_t>({1, 0}), a, a), Contains("where") && Contains("[2]"));
}

TEST_CASE("gradients of broadcast operands are summed back to their shapes", "[broadcast][autograd]") {
  Tensor column = from_vector<float>({1, 2, 3}, {3, 1});
  Tensor row = from_vector<float>({10, 20}, {2});
  column.requires_grad_();
  row.requires_grad_();
  sum(column * row).backward();
  CHECK(column.grad().sizes() == Shape{3, 1});
  CHECK(column.grad().to_vector<float>() == Values{30, 30, 30});
  CHECK(row.grad().to_vector<float>() == Values{6, 6});
  Tensor x = from_vector<float>({1, 2}, {2});
  x.requires_grad_();
  sum(x + 1.0).backward();
  CHECK(x.grad().to_vector<float>() == Values{1, 1});
}

TEST_CASE("a second backward reports freed saved tensors, but runs nodes that saved nothing", "[broadcast][autograd]") {
  Tensor x = from_vector<float>({1, 2}, {2});
  x.requires_grad_();
  Tensor linear = sum(-(x + 1.0));  // neg and add save nothing, as in PyTorch
  linear.backward();
  linear.backward();
  CHECK(x.grad().to_vector<float>() == Values{-2, -2});
  Tensor product = sum(x * from_vector<float>({3, 4}, {2}));  // mul keeps the constant for dx
  product.backward();
  REQUIRE_THROWS_WITH(product.backward(), Contains("MulBackward a second time"));
}
