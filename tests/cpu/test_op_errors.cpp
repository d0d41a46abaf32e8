// Every op checks its inputs and says what clashed: the op, the devices or dtypes, the shapes.
#include <catch2/catch.hpp>

#include "duet/duet.h"

using namespace duet;
using Catch::Matchers::Contains;

TEST_CASE("ops refuse tensors on different devices", "[op_errors]") {
  Tensor a = zeros({2, 3});
  Tensor b = zeros({3}, {.device = cpu(1)});
  REQUIRE_THROWS_WITH(a + b, Contains("add: tensors on different devices: f32[2, 3] on cpu:0 and f32[3] on cpu:1"));
  REQUIRE_THROWS_WITH(mul(a, b), Contains("mul: tensors on different devices"));
  REQUIRE_THROWS_WITH(matmul(a, zeros({3, 2}, {.device = cpu(1)})),
                      Contains("matmul") && Contains("cpu:0") && Contains("cpu:1"));
  REQUIRE_THROWS_WITH(cat({a, zeros({2, 3}, {.device = cpu(1)})}),
                      Contains("cat: tensors on different devices") && Contains("tensor 1 is f32[2, 3] on cpu:1"));
  REQUIRE_THROWS_WITH(where(gt(a, a), a, zeros({2, 3}, {.device = cpu(1)})), Contains("where") && Contains("cpu:1"));
  REQUIRE_THROWS_WITH(maximum(b, a), Contains("maximum") && Contains("f32[3] on cpu:1"));
}

TEST_CASE("ops refuse mixed dtypes", "[op_errors]") {
  Tensor f = zeros({2});
  Tensor d = zeros({2}, {.dtype = DType::f64});
  REQUIRE_THROWS_WITH(f - d, Contains("sub: tensors of different dtypes: f32[2] on cpu:0 and f64[2] on cpu:0"));
  REQUIRE_THROWS_WITH(stack({f, d}), Contains("stack") && Contains("f64[2]"));
  REQUIRE_THROWS_WITH(lt(f, d), Contains("lt") && Contains("dtypes"));
  REQUIRE_THROWS_WITH(where(gt(f, f), f, d), Contains("where") && Contains("dtypes"));
  REQUIRE_THROWS_WITH(where(f, f, f), Contains("where: the condition must be u8") && Contains("f32[2]"));
}

TEST_CASE("floating-only ops name the dtype they got", "[op_errors]") {
  Tensor i = from_vector<int64_t>({1, 2});
  REQUIRE_THROWS_WITH(exp(i), Contains("exp: expected a floating dtype") && Contains("i64[2] on cpu:0"));
  REQUIRE_THROWS_WITH(log(i), Contains("log"));
  REQUIRE_THROWS_WITH(mean(i), Contains("mean") && Contains("i64[2]"));
  REQUIRE_THROWS_WITH(matmul(i, i), Contains("matmul") && Contains("floating"));
  REQUIRE_THROWS_WITH(pow(i, 2.0), Contains("pow") && Contains("floating"));
  // neg, abs, sum, max and comparisons work on integers.
  CHECK(neg(i).to_vector<int64_t>() == std::vector<int64_t>{-1, -2});
  CHECK(abs(neg(i)).to_vector<int64_t>() == std::vector<int64_t>{1, 2});
  CHECK(sum(i).item<int64_t>() == 3);
  CHECK(max(i).item<int64_t>() == 2);
}

TEST_CASE("matmul names both shapes when they do not fit", "[op_errors]") {
  REQUIRE_THROWS_WITH(matmul(zeros({2, 3}), zeros({4, 5})),
                      Contains("matmul: shapes do not match: f32[2, 3] on cpu:0 @ f32[4, 5] on cpu:0") &&
                          Contains("inner dims 3 and 4"));
  REQUIRE_THROWS_WITH(matmul(zeros({3}), zeros({4})), Contains("f32[3]") && Contains("f32[4]"));
  REQUIRE_THROWS_WITH(matmul(zeros({2, 2, 3}), zeros({3, 3, 4})),
                      Contains("matmul") && Contains("[2]") && Contains("[3]") && Contains("broadcast"));
  REQUIRE_THROWS_WITH(matmul(scalar_like(1, zeros({1})), zeros({1})), Contains("at least 1 dim"));
}

TEST_CASE("cat and stack check shapes, naming the tensor that differs", "[op_errors]") {
  REQUIRE_THROWS_WITH(
      cat({zeros({2, 3}), zeros({2, 4}), zeros({3, 3})}, 1),
      Contains("cat: tensor 2 is f32[3, 3] on cpu:0 but tensor 0 is f32[2, 3] on cpu:0") && Contains("[2, *]"));
  REQUIRE_THROWS_WITH(cat({zeros({2, 3}), zeros({6})}), Contains("cat: tensor 1 is f32[6]"));
  REQUIRE_THROWS_WITH(cat({}), Contains("cat: expected a non-empty list"));
  REQUIRE_THROWS_WITH(cat({zeros({2})}, 1), Contains("cat: dim 1 out of range"));
  REQUIRE_THROWS_WITH(stack({zeros({2}), zeros({3})}),
                      Contains("stack: tensor 1 is f32[3]") && Contains("equal shapes"));
}

TEST_CASE("bad dims are rejected with the op and the valid range", "[op_errors]") {
  Tensor x = zeros({2, 3});
  REQUIRE_THROWS_WITH(sum(x, {2}), Contains("sum: dim 2 out of range for a tensor with 2 dims"));
  REQUIRE_THROWS_WITH(mean(x, {0, -2}), Contains("mean: a dim appears twice"));
  REQUIRE_THROWS_WITH(argmax(x, -3), Contains("argmax: dim -3 out of range"));
  REQUIRE_THROWS_WITH(logsumexp(x, {5}), Contains("logsumexp"));
  REQUIRE_THROWS_WITH(x.transpose(0, 2), Contains("transpose: dim 2 out of range"));
  REQUIRE_THROWS_WITH(x.slice(-3, 0, 1), Contains("slice: dim -3"));
  REQUIRE_THROWS_WITH(split(x, 0, 1), Contains("split: split_size must be positive"));
  REQUIRE_THROWS_WITH(split(x, std::vector<int64_t>{1, 1}, 1),
                      Contains("split: sizes [1, 1] add up to 2") && Contains("size 3"));
  REQUIRE_THROWS_WITH(chunk(x, 0), Contains("chunk"));
  REQUIRE_THROWS_WITH(stack({x, x}, 3), Contains("stack: dim 3 out of range"));
}

TEST_CASE("a view never silently moves data", "[op_errors]") {
  Tensor x = zeros({2, 3}, {.device = cpu(1)});
  CHECK(x.t().device() == cpu(1));
  CHECK(x.to(cpu(1)).is_same(x));
  Tensor moved = x.to(cpu(0));
  CHECK(moved.device() == cpu(0));
  CHECK_FALSE(moved.storage() == x.storage());
}
