// View members: shared storage, hand-computed values, sizes, strides and offsets.
#include <catch2/catch.hpp>

#include "duet/duet.h"

using namespace duet;
using Catch::Matchers::Contains;

namespace {
// [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
Tensor grid() { return arange(12).view({3, 4}); }

using Values = std::vector<float>;
}  // namespace

TEST_CASE("view and reshape share storage and infer one -1", "[views]") {
  Tensor x = arange(12);
  Tensor v = x.view({3, -1});
  CHECK(v.sizes() == Shape{3, 4});
  CHECK(v.strides() == Shape{4, 1});
  CHECK(v.storage() == x.storage());
  Tensor r = v.reshape({2, 6});
  CHECK(r.storage() == x.storage());
  CHECK(r.to_vector<float>() == x.to_vector<float>());
  {
    NoGradGuard no_grad;
    r.select(0, 1).fill_(-1);  // writes through one view are seen by all
  }
  CHECK(x.to_vector<float>() == Values{0, 1, 2, 3, 4, 5, -1, -1, -1, -1, -1, -1});
  CHECK(x.version() == v.version());
}

TEST_CASE("view of a transposed tensor fails clearly, and reshape copies", "[views]") {
  Tensor t = grid().t();  // [4, 3] with strides [1, 4]
  CHECK(t.strides() == Shape{1, 4});
  CHECK_FALSE(t.is_contiguous());
  REQUIRE_THROWS_WITH(t.view({12}), Contains("view") && Contains("f32[4, 3] on cpu:0") && Contains("strides [1, 4]") &&
                                        Contains("reshape"));
  Tensor flat = t.reshape({12});
  CHECK(flat.storage() != t.storage());  // no strides could express it: a copy
  CHECK(flat.to_vector<float>() == Values{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
  // Splitting a dim of a transposed tensor is still a view.
  Tensor split = t.view({2, 2, 3});
  CHECK(split.storage() == t.storage());
  CHECK(split.strides() == Shape{2, 1, 4});
}

TEST_CASE("view and reshape reject bad shapes", "[views][errors]") {
  Tensor x = arange(6);
  REQUIRE_THROWS_WITH(x.view({4, -1}), Contains("shape [4, -1] is invalid") && Contains("6 elements"));
  REQUIRE_THROWS_WITH(x.reshape({-1, -1}), Contains("only one dim can be -1"));
  REQUIRE_THROWS_WITH(x.reshape({4, 2}), Contains("reshape") && Contains("[4, 2]"));
}

TEST_CASE("flatten merges a range of dims", "[views]") {
  Tensor x = arange(24).view({2, 3, 4});
  CHECK(x.flatten().sizes() == Shape{24});
  CHECK(x.flatten(1).sizes() == Shape{2, 12});
  CHECK(x.flatten(0, 1).sizes() == Shape{6, 4});
  CHECK(x.flatten(1).storage() == x.storage());
  CHECK(scalar_like(5, x).flatten().sizes() == Shape{1});
  REQUIRE_THROWS_WITH(x.flatten(2, 1), Contains("flatten"));
}

TEST_CASE("transpose and permute swap sizes and strides", "[views]") {
  Tensor x = arange(24).view({2, 3, 4});
  Tensor p = x.permute({2, 0, 1});
  CHECK(p.sizes() == Shape{4, 2, 3});
  CHECK(p.strides() == Shape{1, 12, 4});
  CHECK(p.storage() == x.storage());
  // p[1][1][2] = x[1][2][1] = 12 + 8 + 1
  CHECK(p.select(0, 1).select(0, 1).select(0, 2).item<float>() == 21);
  Tensor t = x.transpose(0, -1);
  CHECK(t.sizes() == Shape{4, 3, 2});
  CHECK(t.strides() == Shape{1, 4, 12});
  CHECK(grid().t().sizes() == Shape{4, 3});
  REQUIRE_THROWS_WITH(x.t(), Contains("t: expected a tensor with at most 2 dims"));
  REQUIRE_THROWS_WITH(x.permute({0, 0, 1}), Contains("appears twice"));
  REQUIRE_THROWS_WITH(x.permute({0, 1}), Contains("permute"));
}

TEST_CASE("slice follows Python's rules: negative indices, clamping, steps", "[views]") {
  Tensor x = grid();
  Tensor s = x.slice(1, 1, 4, 2);  // columns 1 and 3
  CHECK(s.sizes() == Shape{3, 2});
  CHECK(s.strides() == Shape{4, 2});
  CHECK(s.offset() == 1);
  CHECK(s.storage() == x.storage());
  CHECK(s.to_vector<float>() == Values{1, 3, 5, 7, 9, 11});
  Tensor tail = x.slice(0, -2, 100);  // rows 1 and 2
  CHECK(tail.sizes() == Shape{2, 4});
  CHECK(tail.offset() == 4);
  CHECK(x.slice(1, 3, 1).sizes() == Shape{3, 0});  // empty, not an error
  CHECK(x.slice(1, -100, -2).to_vector<float>() == Values{0, 1, 4, 5, 8, 9});
  REQUIRE_THROWS_WITH(x.slice(1, 0, 4, 0), Contains("step must be at least 1"));
}

TEST_CASE("narrow and select give offsets into the same storage", "[views]") {
  Tensor x = grid();
  Tensor n = x.narrow(1, 1, 2);
  CHECK(n.sizes() == Shape{3, 2});
  CHECK(n.offset() == 1);
  CHECK(n.to_vector<float>() == Values{1, 2, 5, 6, 9, 10});
  CHECK(x.narrow(0, -1, 1).to_vector<float>() == Values{8, 9, 10, 11});
  REQUIRE_THROWS_WITH(x.narrow(1, 3, 2), Contains("narrow") && Contains("f32[3, 4]"));
  Tensor row = x.select(0, -1);
  CHECK(row.sizes() == Shape{4});
  CHECK(row.offset() == 8);
  Tensor column = x.select(1, 2);
  CHECK(column.strides() == Shape{4});
  CHECK(column.to_vector<float>() == Values{2, 6, 10});
  CHECK(column.select(0, 1).dim() == 0);
  CHECK(column.select(0, 1).item<float>() == 6);
  REQUIRE_THROWS_WITH(x.select(0, 3), Contains("index 3 is out of range") && Contains("f32[3, 4]"));
  REQUIRE_THROWS_WITH(x.select(2, 0), Contains("dim 2 out of range"));
}

TEST_CASE("squeeze and unsqueeze add and drop size-1 dims", "[views]") {
  Tensor x = arange(6).view({1, 2, 1, 3});
  CHECK(x.squeeze().sizes() == Shape{2, 3});
  CHECK(x.squeeze(0).sizes() == Shape{2, 1, 3});
  CHECK(x.squeeze(1).sizes() == Shape{1, 2, 1, 3});  // not size 1: unchanged
  CHECK(x.squeeze(-2).sizes() == Shape{1, 2, 3});
  Tensor y = arange(6).view({2, 3});
  CHECK(y.unsqueeze(0).sizes() == Shape{1, 2, 3});
  CHECK(y.unsqueeze(1).sizes() == Shape{2, 1, 3});
  CHECK(y.unsqueeze(1).strides() == Shape{3, 3, 1});
  CHECK(y.unsqueeze(-1).sizes() == Shape{2, 3, 1});
  CHECK(y.unsqueeze(-1).is_contiguous());
  CHECK(y.unsqueeze(2).storage() == y.storage());
  REQUIRE_THROWS_WITH(y.unsqueeze(3), Contains("unsqueeze"));
}

TEST_CASE("expand repeats with stride 0 and grows only size-1 dims", "[views]") {
  Tensor x = from_vector<float>({1, 2, 3}, {3, 1});
  Tensor e = x.expand({2, 3, 4});
  CHECK(e.sizes() == Shape{2, 3, 4});
  CHECK(e.strides() == Shape{0, 1, 0});
  CHECK(e.storage() == x.storage());
  CHECK(e.select(0, 1).select(0, 2).to_vector<float>() == Values{3, 3, 3, 3});
  CHECK(x.expand({-1, 2}).sizes() == Shape{3, 2});
  REQUIRE_THROWS_WITH(x.expand({4, 1}),
                      Contains("cannot expand f32[3, 1] on cpu:0 to [4, 1]") && Contains("only size-1 dims can grow"));
  REQUIRE_THROWS_WITH(x.expand({3}), Contains("fewer dims"));
  REQUIRE_THROWS_WITH(x.expand({-1, 3, 1}), Contains("leading"));
}

TEST_CASE("contiguous copies only when it must", "[views]") {
  Tensor x = grid();
  CHECK(x.contiguous().is_same(x));
  Tensor t = x.t().contiguous();
  CHECK(t.is_contiguous());
  CHECK(t.storage() != x.storage());
  CHECK(t.to_vector<float>() == Values{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
}

TEST_CASE("an empty tensor is contiguous whatever its strides", "[views]") {
  CHECK(zeros({2, 0}).is_contiguous());
  CHECK(zeros({0, 3}).t().is_contiguous());
  CHECK(zeros({2, 0}).contiguous().numel() == 0);
}

TEST_CASE("a view of a leaf that requires grad is a non-leaf", "[views][autograd]") {
  Tensor x = arange(6).view({2, 3});
  x.requires_grad_();
  CHECK(x.is_leaf());
  Tensor t = x.t();
  CHECK_FALSE(t.is_leaf());
  CHECK(t.requires_grad());
  CHECK(t.grad_fn()->name() == "TransposeBackward");
  CHECK(x.slice(1, 0, 2).grad_fn()->name() == "SliceBackward");
  CHECK(x.select(0, 0).grad_fn()->name() == "SelectBackward");
  CHECK(x.expand({4, 2, 3}).grad_fn()->name() == "ExpandBackward");
  CHECK(x.view({6}).grad_fn()->name() == "ViewBackward");
  // A view of a plain tensor is a plain tensor.
  CHECK(grid().t().is_leaf());
  CHECK_FALSE(grid().t().requires_grad());
}

TEST_CASE("gradients flow through views back to the base's layout", "[views][autograd]") {
  Tensor x = zeros({2, 3});
  x.requires_grad_();
  // Row 1, columns 0 and 2, scaled by 1 and 2; then a transposed copy of the whole.
  Tensor picked = x.select(0, 1).slice(0, 0, 3, 2);
  Tensor y = sum(picked * from_vector<float>({1, 2})) + sum(x.t() * arange(6).view({3, 2}));
  y.backward();
  // d/dx of the second term: x.t()[j][i] weighted by 2j + i -> x[i][j] gets 2j + i.
  CHECK(x.grad().to_vector<float>() == Values{0, 2, 4, 1 + 1, 3, 5 + 2});
}
