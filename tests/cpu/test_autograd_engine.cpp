// The backward engine: accumulation, retain_graph, hooks, grad mode and every error case.
#include <catch2/catch.hpp>

#include "duet/duet.h"

using namespace duet;
using Catch::Matchers::Contains;

namespace {
Tensor leaf(std::vector<float> values, Shape sizes) {
  Tensor t = from_vector(values, std::move(sizes));
  t.requires_grad_();
  return t;
}
}  // namespace

TEST_CASE("backward accumulates into leaves across uses and calls", "[autograd]") {
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor y = sum(x * x + x);  // dy/dx = 2x + 1
  y.backward();
  CHECK(x.grad().to_vector<float>() == std::vector<float>{3, 5, 7});

  sum(x * 2.0).backward();  // a second graph adds 2 to every element
  CHECK(x.grad().to_vector<float>() == std::vector<float>{5, 7, 9});
  CHECK(x.is_leaf());
  CHECK_FALSE(y.is_leaf());
  CHECK(y.grad_fn() != nullptr);
}

TEST_CASE("a 10,000-op chain runs backward and is freed without deep recursion", "[autograd]") {
  Tensor x = leaf({1.0f}, {1});
  Tensor y = x;
  for (int i = 0; i < 10000; ++i) y = y * 1.0;
  sum(y).backward();
  CHECK(x.grad().item<float>() == 1.0f);
  y = Tensor();  // drops the whole chain: must not overflow the stack either
}

TEST_CASE("retain_graph keeps saved tensors for a second backward", "[autograd]") {
  Tensor x = leaf({2.0f}, {1});
  Tensor y = sum(x * x);
  y.backward(Tensor(), /*retain_graph=*/true);
  y.backward();
  CHECK(x.grad().item<float>() == 8.0f);
}

TEST_CASE("backward twice without retain_graph is a clear error", "[autograd][errors]") {
  Tensor x = leaf({2.0f}, {1});
  Tensor y = sum(x * x);
  y.backward();
  REQUIRE_THROWS_WITH(y.backward(), Contains("a second time") && Contains("retain_graph"));
}

TEST_CASE("backward of a non-scalar needs an explicit gradient", "[autograd][errors]") {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = x * 3.0;
  REQUIRE_THROWS_WITH(y.backward(), Contains("one-element") && Contains("f32[2]"));
  y.backward(from_vector<float>({1, 10}, {2}));
  CHECK(x.grad().to_vector<float>() == std::vector<float>{3, 30});
}

TEST_CASE("a gradient of the wrong shape is rejected", "[autograd][errors]") {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = x * 3.0;
  REQUIRE_THROWS_WITH(y.backward(ones({3})), Contains("f32[3]") && Contains("f32[2]"));
  REQUIRE_THROWS_WITH(x.set_grad(ones({2, 1})), Contains("does not match"));
}

TEST_CASE("a hook that returns a wrongly shaped gradient is caught at accumulation", "[autograd][errors]") {
  Tensor x = leaf({1, 2}, {2});
  x.register_hook([](const Tensor&) { return ones({5}); });
  REQUIRE_THROWS_WITH(sum(x).backward(), Contains("AccumulateGrad") && Contains("f32[5]"));
}

TEST_CASE("an in-place change to a saved tensor is detected", "[autograd][errors]") {
  Tensor w = leaf({1, 2}, {2});
  Tensor x = from_vector<float>({3, 4}, {2});
  Tensor y = sum(w * x);  // saves x for dw
  x.mul_(2.0);
  REQUIRE_THROWS_WITH(y.backward(), Contains("modified in place") && Contains("version 1") && Contains("version 0"));
}

TEST_CASE("in-place writes to tensors that require grad are refused outside NoGradGuard", "[autograd][errors]") {
  Tensor w = leaf({1, 2}, {2});
  REQUIRE_THROWS_WITH(w.add_(ones({2})), Contains("requires grad") && Contains("NoGradGuard"));
  {
    NoGradGuard guard;
    w.add_(ones({2}), 0.5);
  }
  CHECK(w.to_vector<float>() == std::vector<float>{1.5f, 2.5f});
  CHECK_THROWS_WITH(ones({1}).expand({3}).fill_(1.0), Contains("expanded"));
}

TEST_CASE("NoGradGuard and detach cut the graph", "[autograd]") {
  Tensor x = leaf({1, 2}, {2});
  {
    NoGradGuard guard;
    Tensor y = x * 2.0;
    CHECK_FALSE(y.requires_grad());
    CHECK(y.grad_fn() == nullptr);
  }
  CHECK(GradMode::is_enabled());
  Tensor d = x.detach();
  CHECK_FALSE(d.requires_grad());
  CHECK(d.storage() == x.storage());
  CHECK_THROWS_WITH(sum(d * 2.0).backward(), Contains("does not require grad"));
}

TEST_CASE("backward on a tensor that needs no grad is an error", "[autograd][errors]") {
  REQUIRE_THROWS_WITH(sum(ones({2})).backward(), Contains("does not require grad"));
}

TEST_CASE("requires_grad_ is for floating leaves only", "[autograd][errors]") {
  Tensor x = leaf({1, 2}, {2});
  CHECK_THROWS_WITH((x * 2.0).requires_grad_(), Contains("only leaf tensors"));
  CHECK_THROWS_WITH(from_vector<int64_t>({1, 2}).requires_grad_(), Contains("floating"));
}

TEST_CASE("tensor hooks see and may replace gradients", "[autograd]") {
  Tensor x = leaf({1, 2}, {2});
  Tensor y = x * 3.0;
  std::vector<float> seen;
  y.register_hook([&](const Tensor& g) {
    seen = g.to_vector<float>();
    return g * 2.0;  // doubles the gradient flowing on to x
  });
  sum(y).backward();
  CHECK(seen == std::vector<float>{1, 1});
  CHECK(x.grad().to_vector<float>() == std::vector<float>{6, 6});
}

TEST_CASE("post-accumulate hooks run once per leaf after its grad is complete", "[autograd]") {
  Tensor a = leaf({1}, {1});
  Tensor b = leaf({2}, {1});
  std::vector<std::string> order;
  std::vector<float> grad_seen;
  a.register_post_accumulate_grad_hook([&](const Tensor& t) {
    order.push_back("a");
    grad_seen.push_back(t.grad().item<float>());
  });
  b.register_post_accumulate_grad_hook([&](const Tensor&) { order.push_back("b"); });
  // a is used twice: its hook must run once, with the summed gradient.
  sum(a * b + a * 3.0).backward();
  REQUIRE(order.size() == 2);
  CHECK(grad_seen == std::vector<float>{5});
  CHECK_THROWS_WITH((a * 2.0).register_post_accumulate_grad_hook([](const Tensor&) {}), Contains("non-leaf"));
}

TEST_CASE("gradients flow into several roots at once", "[autograd]") {
  Tensor x = leaf({1, 2}, {2});
  Tensor y1 = sum(x * 2.0);
  Tensor y2 = sum(x * x);
  autograd::backward({y1, y2}, {});
  CHECK(x.grad().to_vector<float>() == std::vector<float>{4, 6});
}
