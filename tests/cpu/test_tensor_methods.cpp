// Tensor's method twins of the ops (x.sum(1), logits.argmax(1).eq(y)): each gives its op's
// values, dtype and gradients, on the same inputs.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>

#include "duet/duet.h"

using namespace duet;
using Catch::Matchers::Contains;

namespace {

using Inputs = std::vector<Tensor>;
using Fn = std::function<Tensor(const Inputs&)>;

// Fresh leaves (requiring grad where floating) holding the values of `inputs`.
Inputs leaves(const Inputs& inputs) {
  Inputs out;
  for (const Tensor& t : inputs) {
    Tensor copy = t.detach().clone();
    if (is_floating(copy.dtype())) copy.requires_grad_();
    out.push_back(copy);
  }
  return out;
}

// The method form and the op give the same values and dtype, and, where the output is
// differentiable, the same gradients for every input.
void check_twin(const Fn& method, const Fn& op, const Inputs& inputs) {
  const Inputs a = leaves(inputs), b = leaves(inputs);
  const Tensor by_method = method(a), by_op = op(b);
  REQUIRE(by_method.dtype() == by_op.dtype());
  REQUIRE(by_method.sizes() == by_op.sizes());
  CHECK(by_method.to_vector<double>() == by_op.to_vector<double>());
  REQUIRE(by_method.requires_grad() == by_op.requires_grad());
  if (!by_op.requires_grad()) return;
  Generator g(7);
  Tensor weights = rand(by_op.sizes(), {.dtype = by_op.dtype()}, &g);
  sum(by_method * weights).backward();
  sum(by_op * weights).backward();
  for (size_t i = 0; i < inputs.size(); ++i) {
    REQUIRE(a[i].grad().defined() == b[i].grad().defined());
    if (a[i].grad().defined()) CHECK(a[i].grad().to_vector<double>() == b[i].grad().to_vector<double>());
  }
}

Tensor values(Shape shape, uint64_t seed, double lo = -2, double hi = 2) {
  Generator g(seed);
  return rand(std::move(shape), {.dtype = DType::f64}, &g) * (hi - lo) + lo;
}

}  // namespace

TEST_CASE("Tensor methods: the done-when expression counts the right predictions", "[tensor-methods]") {
  Tensor logits = from_vector<float>({0.1f, 0.9f, 0.0f, 0.7f, 0.2f, 0.1f, 0.3f, 0.3f, 0.4f, 0.0f, 0.0f, 1.0f}, {4, 3});
  Tensor y = from_vector<int64_t>({1, 0, 0, 2});  // rows 0, 1 and 3 are right, row 2 predicts 2
  CHECK(logits.argmax(1).eq(y).sum().item<int64_t>() == 3);
  CHECK(logits.argmax(1).eq(y).sum().item<int64_t>() == sum(eq(argmax(logits, 1), y)).item<int64_t>());
}

TEST_CASE("Tensor methods: elementwise ops", "[tensor-methods]") {
  const Inputs x = {values({3, 4}, 1)};
  const Inputs positive = {values({3, 4}, 2, 0.5, 3)};
  using Unary = std::pair<Fn, Fn>;
  const std::vector<Unary> unary = {
      {[](const Inputs& in) { return in[0].neg(); }, [](const Inputs& in) { return neg(in[0]); }},
      {[](const Inputs& in) { return in[0].exp(); }, [](const Inputs& in) { return exp(in[0]); }},
      {[](const Inputs& in) { return in[0].abs(); }, [](const Inputs& in) { return abs(in[0]); }},
      {[](const Inputs& in) { return in[0].relu(); }, [](const Inputs& in) { return relu(in[0]); }},
      {[](const Inputs& in) { return in[0].sigmoid(); }, [](const Inputs& in) { return sigmoid(in[0]); }},
      {[](const Inputs& in) { return in[0].tanh(); }, [](const Inputs& in) { return tanh(in[0]); }},
      {[](const Inputs& in) { return in[0].clamp(-1, 0.5); }, [](const Inputs& in) { return clamp(in[0], -1, 0.5); }},
      {[](const Inputs& in) { return in[0].clamp(std::nullopt, 0.5); },
       [](const Inputs& in) { return clamp(in[0], std::nullopt, 0.5); }},
      {[](const Inputs& in) { return in[0].pow(3.0); }, [](const Inputs& in) { return pow(in[0], 3.0); }},
  };
  for (const auto& [method, op] : unary) check_twin(method, op, x);
  check_twin([](const Inputs& in) { return in[0].log(); }, [](const Inputs& in) { return log(in[0]); }, positive);
  check_twin([](const Inputs& in) { return in[0].sqrt(); }, [](const Inputs& in) { return sqrt(in[0]); }, positive);

  const Inputs pair = {values({3, 4}, 3), values({4}, 4, 0.5, 2)};  // broadcast
  const std::vector<Unary> binary = {
      {[](const Inputs& in) { return in[0].add(in[1]); }, [](const Inputs& in) { return add(in[0], in[1]); }},
      {[](const Inputs& in) { return in[0].sub(in[1]); }, [](const Inputs& in) { return sub(in[0], in[1]); }},
      {[](const Inputs& in) { return in[0].mul(in[1]); }, [](const Inputs& in) { return mul(in[0], in[1]); }},
      {[](const Inputs& in) { return in[0].div(in[1]); }, [](const Inputs& in) { return div(in[0], in[1]); }},
      {[](const Inputs& in) { return in[0].add(2.5); }, [](const Inputs& in) { return in[0] + 2.5; }},
      {[](const Inputs& in) { return in[0].sub(2.5); }, [](const Inputs& in) { return in[0] - 2.5; }},
      {[](const Inputs& in) { return in[0].mul(2.5); }, [](const Inputs& in) { return in[0] * 2.5; }},
      {[](const Inputs& in) { return in[0].div(2.5); }, [](const Inputs& in) { return in[0] / 2.5; }},
      {[](const Inputs& in) { return in[0].floor_divide(in[1]); },
       [](const Inputs& in) { return floor_divide(in[0], in[1]); }},
      {[](const Inputs& in) { return in[1].pow(in[0]); }, [](const Inputs& in) { return pow(in[1], in[0]); }},
      {[](const Inputs& in) { return in[0].maximum(in[1]); }, [](const Inputs& in) { return maximum(in[0], in[1]); }},
      {[](const Inputs& in) { return in[0].minimum(in[1]); }, [](const Inputs& in) { return minimum(in[0], in[1]); }},
      {[](const Inputs& in) { return in[0].eq(in[1]); }, [](const Inputs& in) { return eq(in[0], in[1]); }},
      {[](const Inputs& in) { return in[0].ne(in[1]); }, [](const Inputs& in) { return ne(in[0], in[1]); }},
      {[](const Inputs& in) { return in[0].lt(in[1]); }, [](const Inputs& in) { return lt(in[0], in[1]); }},
      {[](const Inputs& in) { return in[0].le(in[1]); }, [](const Inputs& in) { return le(in[0], in[1]); }},
      {[](const Inputs& in) { return in[0].gt(in[1]); }, [](const Inputs& in) { return gt(in[0], in[1]); }},
      {[](const Inputs& in) { return in[0].ge(in[1]); }, [](const Inputs& in) { return ge(in[0], in[1]); }},
      {[](const Inputs& in) { return in[0].where(gt(in[0], in[1]), in[1]); },
       [](const Inputs& in) { return where(gt(in[0], in[1]), in[0], in[1]); }},
  };
  for (const auto& [method, op] : binary) check_twin(method, op, pair);
}

TEST_CASE("Tensor methods: reductions take PyTorch's dim and keepdim", "[tensor-methods]") {
  const Inputs x = {values({2, 3, 4}, 5)};
  using Twin = std::pair<Fn, Fn>;
  const std::vector<Twin> twins = {
      {[](const Inputs& in) { return in[0].sum(); }, [](const Inputs& in) { return sum(in[0]); }},
      {[](const Inputs& in) { return in[0].sum(1); }, [](const Inputs& in) { return sum(in[0], {1}); }},
      {[](const Inputs& in) {
         return in[0].sum({0, 2}, true);
       },
       [](const Inputs& in) {
         return sum(in[0], {0, 2}, true);
       }},
      {[](const Inputs& in) { return in[0].mean(); }, [](const Inputs& in) { return mean(in[0]); }},
      {[](const Inputs& in) { return in[0].mean(-1, true); }, [](const Inputs& in) { return mean(in[0], {-1}, true); }},
      {[](const Inputs& in) { return in[0].max(); }, [](const Inputs& in) { return max(in[0]); }},
      {[](const Inputs& in) { return in[0].amax(1); }, [](const Inputs& in) { return max(in[0], {1}); }},
      {[](const Inputs& in) { return in[0].min(); }, [](const Inputs& in) { return min(in[0]); }},
      {[](const Inputs& in) {
         return in[0].amin({1, 2}, true);
       },
       [](const Inputs& in) {
         return amin(in[0], {1, 2}, true);
       }},
      {[](const Inputs& in) { return in[0].min(2).values; }, [](const Inputs& in) { return min(in[0], 2).values; }},
      {[](const Inputs& in) { return in[0].min(2, true).indices; },
       [](const Inputs& in) { return min(in[0], 2, true).indices; }},
      {[](const Inputs& in) { return in[0].argmax(1); }, [](const Inputs& in) { return argmax(in[0], 1); }},
      {[](const Inputs& in) { return in[0].argmin(-1, true); },
       [](const Inputs& in) { return argmin(in[0], -1, true); }},
      {[](const Inputs& in) { return in[0].var(); }, [](const Inputs& in) { return var(in[0]); }},
      {[](const Inputs& in) { return in[0].var(1, false, true); },
       [](const Inputs& in) { return var(in[0], {1}, false, true); }},
      {[](const Inputs& in) {
         return in[0].std({0, 1});
       },
       [](const Inputs& in) {
         return duet::std(in[0], {0, 1});
       }},
      {[](const Inputs& in) { return in[0].logsumexp(2); }, [](const Inputs& in) { return logsumexp(in[0], {2}); }},
  };
  for (const auto& [method, op] : twins) check_twin(method, op, x);
}

TEST_CASE("Tensor methods: matmul, split, chunk, softmax and log_softmax", "[tensor-methods]") {
  check_twin([](const Inputs& in) { return in[0].matmul(in[1]); },
             [](const Inputs& in) { return matmul(in[0], in[1]); }, {values({3, 4}, 6), values({4, 2}, 7)});
  check_twin([](const Inputs& in) { return in[0].softmax(1); },
             [](const Inputs& in) { return nn::functional::softmax(in[0], 1); }, {values({3, 4}, 8)});
  check_twin([](const Inputs& in) { return in[0].log_softmax(-1); },
             [](const Inputs& in) { return nn::functional::log_softmax(in[0], -1); }, {values({3, 4}, 9)});
  // Each piece of a split is its op's piece, and its gradient flows back the same way.
  for (size_t piece = 0; piece < 2; ++piece) {
    check_twin([piece](const Inputs& in) { return in[0].split(3, 1)[piece]; },
               [piece](const Inputs& in) { return split(in[0], 3, 1)[piece]; }, {values({2, 5}, 10)});
    check_twin(
        [piece](const Inputs& in) {
          return in[0].split({1, 4}, 1)[piece];
        },
        [piece](const Inputs& in) {
          return split(in[0], std::vector<int64_t>{1, 4}, 1)[piece];
        },
        {values({2, 5}, 11)});
    check_twin([piece](const Inputs& in) { return in[0].chunk(2)[piece]; },
               [piece](const Inputs& in) { return chunk(in[0], 2)[piece]; }, {values({3, 2}, 12)});
  }
}

TEST_CASE("clamp: values and gradient as torch.clamp", "[tensor-methods][gradcheck]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = from_vector<double>({-2, -1, 0, 0.5, 1, 3, nan});
  x.requires_grad_();
  Tensor out = x.clamp(-1, 0.5);
  const std::vector<double> got = out.to_vector<double>();
  const std::vector<double> expected = {-1, -1, 0, 0.5, 0.5, 0.5};
  for (size_t i = 0; i < expected.size(); ++i) CHECK(got[i] == expected[i]);
  CHECK(std::isnan(got[6]));
  sum(out).backward();
  // torch.clamp's gradient passes where min <= x <= max, the bounds included.
  const std::vector<double> grad = x.grad().to_vector<double>();
  CHECK(std::vector<double>(grad.begin(), grad.end() - 1) == std::vector<double>{0, 1, 1, 1, 0, 0});
  // min > max gives max everywhere, as min(max(x, min), max) does.
  CHECK(clamp(from_vector<double>({-3, 0, 3}), 1, -1).to_vector<double>() == std::vector<double>{-1, -1, -1});
  CHECK(clamp(from_vector<int64_t>({-3, 0, 3}), 0).to_vector<int64_t>() == std::vector<int64_t>{0, 0, 3});
  REQUIRE_THROWS_WITH(clamp(x, std::nullopt), Contains("clamp: at least one of min and max"));
  // Away from the bounds, where the derivative is defined.
  GradcheckResult result =
      gradcheck([](const Inputs& in) { return clamp(in[0], -0.5, 0.5); },
                {from_vector<double>({-0.9, -0.7, -0.3, 0.1, 0.4, 0.6, 0.8}, {7}).requires_grad_()});
  INFO(result.message);
  CHECK(result.ok);
}
