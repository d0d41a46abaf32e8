// gradcheck for every differentiable op, view and conversion, over several shapes including
// broadcast and non-contiguous inputs; and gradcheck itself catching a wrong gradient.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "constant_rows.h"
#include "duet/autograd/function.h"
#include "duet/duet.h"

using namespace duet;
using Catch::Matchers::Contains;

namespace {

using Inputs = std::vector<Tensor>;
using Fn = std::function<Tensor(const Inputs&)>;

uint64_t next_seed() {
  static uint64_t seed = 1;
  return seed++;
}

// Uniform in [lo, hi), f64, a plain tensor (not yet a leaf requiring grad).
Tensor uniform(Shape shape, double lo, double hi) {
  Generator g(next_seed());
  NoGradGuard no_grad;
  return rand(std::move(shape), {.dtype = DType::f64}, &g) * (hi - lo) + lo;
}

Tensor leaf(Tensor t) {
  t.requires_grad_();
  return t;
}

// A leaf with values in [lo, hi).
Tensor input(Shape shape, double lo = -1, double hi = 1) { return leaf(uniform(std::move(shape), lo, hi)); }

// A non-contiguous leaf: the transpose of a stored [cols, rows] tensor.
Tensor transposed(int64_t rows, int64_t cols, double lo = -1, double hi = 1) {
  return leaf(uniform({cols, rows}, lo, hi).t());
}

// A non-contiguous leaf: every second column of a wider tensor, at an offset.
Tensor strided(int64_t rows, int64_t cols, double lo = -1, double hi = 1) {
  return leaf(uniform({rows, 2 * cols + 1}, lo, hi).slice(1, 1, 2 * cols + 1, 2));
}

// Magnitudes in [0.2, 1) with alternating signs: away from the kinks of abs and relu.
Tensor away_from_zero(Shape shape) {
  std::vector<double> v = uniform(shape, 0.2, 1).to_vector<double>();
  for (size_t i = 0; i < v.size(); i += 2) v[i] = -v[i];
  return leaf(from_vector<double>(v, std::move(shape)));
}

void check_gradient(const Fn& fn, const Inputs& inputs, GradcheckOptions options = {}) {
  GradcheckResult result = gradcheck(fn, inputs, options);
  INFO(result.message);
  CHECK(result.ok);
}

// Checks fn over each input set.
void check_all(const Fn& fn, const std::vector<Inputs>& cases) {
  for (const Inputs& inputs : cases) check_gradient(fn, inputs);
}

}  // namespace

TEST_CASE("gradcheck: unary ops", "[gradcheck]") {
  using Unary = Tensor (*)(const Tensor&);
  for (Unary op : {Unary(neg), Unary(exp), Unary(sigmoid), Unary(tanh)}) {
    check_all([op](const Inputs& x) { return op(x[0]); },
              {{input({5})}, {input({2, 3})}, {transposed(3, 4)}, {strided(2, 3)}, {input({})}});
  }
  for (Unary op : {Unary(log), Unary(sqrt)}) {  // positive inputs only
    check_all([op](const Inputs& x) { return op(x[0]); },
              {{input({5}, 0.5, 2)}, {transposed(3, 2, 0.5, 2)}, {strided(2, 2, 0.5, 2)}});
  }
  for (Unary op : {Unary(abs), Unary(relu)}) {  // away from the kink at 0
    check_all([op](const Inputs& x) { return op(x[0]); },
              {{away_from_zero({6})}, {away_from_zero({2, 3})}, {leaf(away_from_zero({3, 2}).detach().t())}});
  }
  check_all([](const Inputs& x) { return -x[0]; }, {{input({3})}});
}

TEST_CASE("gradcheck: binary ops with broadcasting", "[gradcheck]") {
  using Binary = Tensor (*)(const Tensor&, const Tensor&);
  const std::vector<std::pair<const char*, Binary>> smooth = {
      {"add", add}, {"sub", sub}, {"mul", mul}, {"maximum", maximum}, {"minimum", minimum}};
  for (const auto& [name, op] : smooth) {
    INFO(name);
    check_all([op](const Inputs& x) { return op(x[0], x[1]); }, {{input({2, 3}), input({2, 3})},
                                                                 {input({3, 1}), input({4})},        // both broadcast
                                                                 {input({2, 3, 4}), input({3, 1})},  // new leading dim
                                                                 {transposed(3, 2), input({2})},     // non-contiguous
                                                                 {input({}), strided(2, 3)}});       // a 0-d operand
    // Only one operand requires grad: the other is a constant.
    Tensor constant = uniform({2, 3}, -1, 1);
    check_all([op, constant](const Inputs& x) { return op(x[0], constant); }, {{input({2, 3})}, {input({3})}});
    check_all([op, constant](const Inputs& x) { return op(constant, x[0]); }, {{input({2, 1})}});
  }
  check_all([](const Inputs& x) { return div(x[0], x[1]); }, {{input({2, 3}), input({2, 3}, 0.5, 2)},
                                                              {input({3, 1}), input({4}, -2, -0.5)},
                                                              {transposed(2, 3), input({}, 1, 2)}});
  check_all([](const Inputs& x) { return pow(x[0], x[1]); }, {{input({2, 3}, 0.5, 2), input({2, 3}, -1, 2)},
                                                              {input({3, 1}, 0.5, 2), input({4}, 0.5, 3)},
                                                              {transposed(2, 3, 0.5, 2), input({})}});
  check_all([](const Inputs& x) { return pow(x[0], 3.0) + pow(x[0], -0.5); }, {{input({4}, 0.5, 2)}});
}

TEST_CASE("gradcheck: operators with scalars", "[gradcheck]") {
  check_all([](const Inputs& x) { return (x[0] + 2.0) * (3.0 - x[0]) + (x[0] - 1.0) / 4.0; }, {{input({3})}});
  check_all([](const Inputs& x) { return 2.0 / x[0] + 0.5 * x[0] + 1.0 + x[0] * 5.0; }, {{input({2, 2}, 0.5, 1.5)}});
  check_all([](const Inputs& x) { return x[0] * x[1] - x[0] / x[1]; }, {{input({2, 3}), input({3}, 1, 2)}});
}

TEST_CASE("gradcheck: reductions", "[gradcheck]") {
  for (bool keepdim : {false, true}) {
    check_all([keepdim](const Inputs& x) { return sum(x[0], {}, keepdim); }, {{input({2, 3})}, {input({})}});
    check_all([keepdim](const Inputs& x) { return sum(x[0], {1}, keepdim); }, {{input({2, 3})}, {transposed(3, 4)}});
    check_all([keepdim](const Inputs& x) { return sum(x[0], {0, -1}, keepdim); }, {{input({2, 3, 4})}});
    check_all([keepdim](const Inputs& x) { return mean(x[0], {}, keepdim); }, {{input({2, 3})}});
    check_all([keepdim](const Inputs& x) { return mean(x[0], {-1}, keepdim); }, {{strided(3, 4)}, {input({2, 3, 4})}});
    check_all([keepdim](const Inputs& x) { return max(x[0], {}, keepdim); }, {{input({2, 3})}});
    check_all([keepdim](const Inputs& x) { return max(x[0], {1}, keepdim); }, {{input({3, 4})}, {transposed(3, 4)}});
    check_all([keepdim](const Inputs& x) { return max(x[0], {0, 2}, keepdim); }, {{input({2, 3, 4})}});
    check_all([keepdim](const Inputs& x) { return logsumexp(x[0], {1}, keepdim); }, {{input({3, 4})}, {strided(2, 5)}});
    check_all([keepdim](const Inputs& x) { return logsumexp(x[0], {0, 1}, keepdim); }, {{input({2, 3})}});
  }
}

TEST_CASE("gradcheck: amin, min along a dim, var and std", "[gradcheck][reduce]") {
  for (bool keepdim : {false, true}) {
    check_all([keepdim](const Inputs& x) { return amin(x[0], {}, keepdim); }, {{input({2, 3})}});
    check_all([keepdim](const Inputs& x) { return amin(x[0], {1}, keepdim); }, {{input({3, 4})}, {transposed(3, 4)}});
    check_all([keepdim](const Inputs& x) { return amin(x[0], {0, 2}, keepdim); }, {{input({2, 3, 4})}});
    check_all([keepdim](const Inputs& x) { return min(x[0], 1, keepdim).values; }, {{input({3, 4})}, {strided(3, 4)}});
    check_all([keepdim](const Inputs& x) { return min(x[0], -1, keepdim).values; }, {{input({2, 3, 4})}, {input({})}});
    for (bool unbiased : {true, false}) {
      for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{}, {1}, {0, 2}}) {
        check_all([=](const Inputs& x) { return var(x[0], dims, unbiased, keepdim); }, {{input({2, 3, 4})}});
        check_all([=](const Inputs& x) { return duet::std(x[0], dims, unbiased, keepdim); }, {{input({2, 3, 4})}});
      }
      check_all([=](const Inputs& x) { return var(x[0], {0}, unbiased, keepdim); }, {{transposed(3, 4)}});
    }
  }
  check_all([](const Inputs& x) { return min(x[0]); }, {{input({4})}});
}

TEST_CASE("amin splits the gradient evenly among ties, min along a dim gives it to the index it returns",
          "[gradcheck][reduce]") {
  Tensor x = leaf(from_vector<double>({1, 0, 0, 2, 3, 2}, {2, 3}));
  sum(amin(x, {1})).backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 0.5, 0.5, 0.5, 0, 0.5});
  Tensor y = leaf(from_vector<double>({1, 0, 0, 2, 3, 2}, {2, 3}));
  ValuesIndices m = min(y, 1);
  CHECK(m.values.to_vector<double>() == std::vector<double>{0, 2});
  CHECK(m.indices.to_vector<int64_t>() == std::vector<int64_t>{1, 0});  // the first minimum
  CHECK_FALSE(m.indices.requires_grad());
  sum(m.values).backward();
  CHECK(y.grad().to_vector<double>() == std::vector<double>{0, 1, 0, 1, 0, 0});
  Tensor z = leaf(from_vector<double>({4, 4, 4, 4}));
  min(z).backward();
  CHECK(z.grad().to_vector<double>() == std::vector<double>{0.25, 0.25, 0.25, 0.25});
  // NaN is the minimum, as in PyTorch, and argmin points at the first one.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor w = from_vector<double>({3, nan, 1, nan}, {1, 4});
  CHECK(std::isnan(amin(w).item<double>()));
  CHECK(argmin(w, 1).to_vector<int64_t>() == std::vector<int64_t>{1});
  CHECK(std::isnan(min(w, 1).values.item<double>()));
  // Integers: amin keeps the dtype; var refuses them, as torch.var.
  CHECK(amin(from_vector<int64_t>({5, -2, 7})).item<int64_t>() == -2);
  CHECK_THROWS_WITH(var(from_vector<int64_t>({5, -2, 7})), Catch::Contains("var") && Catch::Contains("i64"));
  CHECK_THROWS_WITH(min(x, 2), Catch::Contains("min: dim 2 out of range"));
  CHECK_THROWS_WITH(argmin(zeros({0, 3}), 0), Catch::Contains("argmin: cannot reduce over an empty dim"));
}

TEST_CASE("std's gradient is 0 where std is 0, var of one element with the correction is NaN", "[gradcheck][reduce]") {
  Tensor x = leaf(full({2, 3}, 1.5, {.dtype = DType::f64}));
  Tensor s = duet::std(x, {1});
  CHECK(s.to_vector<double>() == std::vector<double>{0, 0});
  sum(s).backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>(6, 0.0));
  CHECK(std::isnan(var(from_vector<double>({2.5})).item<double>()));
  CHECK(var(from_vector<double>({2.5}), {}, /*unbiased=*/false).item<double>() == 0);
  CHECK(var(from_vector<double>({1, 2, 3, 4})).item<double>() == Approx(5.0 / 3));
}

TEST_CASE("var and std of a constant row are exactly 0, with gradients of 0, whatever its value and dtype",
          "[gradcheck][reduce]") {
  test::check_constant_rows_spread(cpu());
}

TEST_CASE("max splits the gradient evenly among ties", "[gradcheck][reduce]") {
  Tensor x = leaf(from_vector<double>({1, 3, 3, 2, 0, 2}, {2, 3}));
  sum(max(x, {1})).backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 0.5, 0.5, 0.5, 0, 0.5});
  Tensor y = leaf(from_vector<double>({4, 4, 4, 4}));
  max(y).backward();
  CHECK(y.grad().to_vector<double>() == std::vector<double>{0.25, 0.25, 0.25, 0.25});
}

TEST_CASE("argmax picks indices and is not differentiable", "[gradcheck][reduce]") {
  Tensor x = leaf(from_vector<double>({1, 5, 3, 7, 2, 0}, {2, 3}));
  Tensor i = argmax(x, 1);
  CHECK(i.dtype() == DType::i64);
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{1, 0});
  CHECK_FALSE(i.requires_grad());
  CHECK(argmax(x, 0, true).sizes() == Shape{1, 3});
  CHECK(argmax(x, 0, true).to_vector<int64_t>() == std::vector<int64_t>{1, 0, 0});
}

TEST_CASE("gradcheck: matmul in every NumPy form", "[gradcheck][matmul]") {
  check_all([](const Inputs& x) { return matmul(x[0], x[1]); },
            {{input({2, 3}), input({3, 4})},
             {transposed(2, 3), transposed(3, 4)},  // transposed operands (no copies)
             {strided(3, 2), input({2, 2})},
             {input({3}), input({3, 4})},              // vector @ matrix
             {input({2, 3}), input({3})},              // matrix @ vector
             {input({3}), input({3})},                 // dot product: a 0-d result
             {input({2, 2, 3}), input({2, 3, 4})},     // batched
             {input({2, 1, 2, 3}), input({3, 3, 2})},  // broadcast batch dims
             {input({2, 2, 3}), input({3, 2})},        // a matrix against a batch
             {input({3}), input({2, 3, 2})},           // a vector against a batch
             {input({2, 4, 3}), input({3})}});
  // Only one operand requires grad.
  Tensor constant = uniform({3, 2}, -1, 1);
  check_all([constant](const Inputs& x) { return matmul(x[0], constant); }, {{input({4, 3})}});
  check_all([constant](const Inputs& x) { return matmul(constant.t(), x[0]); }, {{input({3, 2})}});
}

TEST_CASE("gradcheck: cat, stack, split, chunk", "[gradcheck][join]") {
  check_all([](const Inputs& x) { return cat(x, 0); }, {{input({2, 3}), input({1, 3}), transposed(3, 3)}});
  check_all([](const Inputs& x) { return cat(x, -1); }, {{input({2, 1}), strided(2, 3)}, {input({4}), input({2})}});
  check_all([](const Inputs& x) { return cat({x[0], x[0] * 2.0, x[1]}, 1); }, {{input({2, 2}), input({2, 1})}});
  check_all([](const Inputs& x) { return stack(x, 0); }, {{input({2, 3}), transposed(2, 3)}});
  check_all([](const Inputs& x) { return stack(x, 2); }, {{input({2, 3}), input({2, 3}), input({2, 3})}});
  check_all(
      [](const Inputs& x) {
        std::vector<Tensor> parts = split(x[0], 2, 1);  // sizes 2, 2, 1
        return parts[0] * 2.0 + parts[1] * parts[0] + sum(parts[2]);
      },
      {{input({3, 5})}, {transposed(3, 5)}});
  check_all(
      [](const Inputs& x) {
        std::vector<Tensor> parts = split(x[0], std::vector<int64_t>{1, 3}, 0);
        return sum(parts[0]) * sum(parts[1], {0});
      },
      {{input({4, 2})}});
  check_all(
      [](const Inputs& x) {
        std::vector<Tensor> parts = chunk(x[0], 3, -1);  // sizes 3, 3, 1
        return cat({parts[2], parts[0], parts[1] * parts[0]}, 1);
      },
      {{input({2, 7})}});
}

TEST_CASE("split and chunk are views with torch's sizes", "[join]") {
  Tensor x = arange(10);
  std::vector<Tensor> parts = split(x, 4);
  REQUIRE(parts.size() == 3);
  CHECK(parts[2].to_vector<float>() == std::vector<float>{8, 9});
  CHECK(parts[1].storage() == x.storage());
  CHECK(chunk(x, 4).size() == 4);              // sizes 3, 3, 3, 1
  CHECK(chunk(arange(6), 4).size() == 3);      // sizes 2, 2, 2: fewer than asked, as in torch
  CHECK(chunk(zeros({0, 2}), 3).size() == 3);  // an empty dim: `chunks` empty pieces, as in torch
  CHECK(chunk(x, 3)[2].numel() == 2);
  CHECK(cat(split(x, std::vector<int64_t>{3, 0, 7})).to_vector<float>() == x.to_vector<float>());
}

TEST_CASE("gradcheck: where", "[gradcheck][join]") {
  Tensor cond = from_vector<uint8_t>({1, 0, 0, 1, 1, 0}, {2, 3});
  check_all([cond](const Inputs& x) { return where(cond, x[0], x[1]); },
            {{input({2, 3}), input({2, 3})}, {input({3}), input({2, 1})}, {transposed(2, 3), input({})}});
  Tensor constant = uniform({3}, -1, 1);
  check_all([cond, constant](const Inputs& x) { return where(cond, x[0], constant); }, {{input({2, 3})}});
  check_all([cond, constant](const Inputs& x) { return where(cond, constant, x[0]); }, {{input({2, 1})}});
  check_all([](const Inputs& x) { return where(gt(x[0], x[1]), x[0] * x[1], x[1]); }, {{input({4}), input({4})}});
}

TEST_CASE("gradcheck: views", "[gradcheck][views]") {
  check_all([](const Inputs& x) { return x[0].view({3, 2}); }, {{input({2, 3})}, {input({6})}});
  check_all([](const Inputs& x) { return x[0].view({-1}); }, {{input({2, 3})}, {transposed(3, 1)}});
  check_all([](const Inputs& x) { return x[0].reshape({2, 3}); }, {{input({6})}, {transposed(3, 2)}, {strided(2, 3)}});
  check_all([](const Inputs& x) { return x[0].flatten(); }, {{input({2, 3, 2})}, {transposed(2, 3)}});
  check_all([](const Inputs& x) { return x[0].flatten(1, 2); }, {{input({2, 3, 2})}});
  check_all([](const Inputs& x) { return x[0].transpose(0, 2); }, {{input({2, 3, 4})}});
  check_all([](const Inputs& x) { return x[0].t(); }, {{input({2, 3})}, {transposed(2, 3)}, {input({3})}});
  check_all([](const Inputs& x) { return x[0].permute({1, 2, 0}); }, {{input({2, 3, 4})}});
  check_all([](const Inputs& x) { return x[0].slice(1, 1, 5, 2); }, {{input({2, 6})}, {transposed(3, 5)}});
  check_all([](const Inputs& x) { return x[0].slice(0, -2, 100); }, {{input({4, 2})}});
  check_all([](const Inputs& x) { return x[0].narrow(1, 1, 2); }, {{input({3, 4})}, {strided(2, 4)}});
  check_all([](const Inputs& x) { return x[0].select(0, 1); }, {{input({3, 2})}, {transposed(3, 2)}});
  check_all([](const Inputs& x) { return x[0].select(-1, -1); }, {{input({2, 3, 4})}});
  check_all([](const Inputs& x) { return x[0].squeeze(); }, {{input({1, 3, 1})}});
  check_all([](const Inputs& x) { return x[0].squeeze(0); }, {{input({1, 3})}});
  check_all([](const Inputs& x) { return x[0].unsqueeze(1); }, {{input({2, 3})}, {transposed(2, 3)}});
  check_all([](const Inputs& x) { return x[0].expand({4, 2, 3}); }, {{input({2, 1})}, {input({3})}, {input({})}});
  check_all([](const Inputs& x) { return x[0].expand({-1, 3}); }, {{input({2, 1})}});
  check_all([](const Inputs& x) { return x[0].contiguous(); }, {{transposed(2, 3)}, {input({2, 2})}});
  // Views of views, and a view written into by several branches.
  check_all(
      [](const Inputs& x) {
        Tensor v = x[0].t().slice(0, 0, 2).unsqueeze(0).expand({2, 2, 3});
        return v * x[0].select(1, 0).view({1, 1, 3}) + x[0].narrow(1, 2, 1).t();
      },
      {{input({3, 4})}});
}

TEST_CASE("gradcheck: conversions", "[gradcheck][conversion]") {
  check_all([](const Inputs& x) { return x[0].clone() * x[0]; }, {{input({2, 3})}, {transposed(2, 2)}});
  check_all([](const Inputs& x) { return x[0].to(cpu(1)) * 2.0; }, {{input({2, 3})}});
  check_all([](const Inputs& x) { return (x[0].to(cpu(1)) * 2.0).to(cpu(0)) + x[0]; }, {{input({3})}});
  // Through f32 the round trip loses precision, so the steps and tolerances are coarser.
  GradcheckOptions coarse{.eps = 1e-3, .atol = 1e-3, .rtol = 1e-2};
  check_gradient([](const Inputs& x) { return x[0].to(DType::f32).to(DType::f64) * x[0]; }, {input({2, 3})}, coarse);
  check_gradient([](const Inputs& x) { return exp(x[0].to(DType::f32)); }, {transposed(2, 2)}, coarse);
}

TEST_CASE("conversions keep the graph and their devices", "[conversion]") {
  Tensor x = input({3});
  Tensor y = x.to(cpu(1));
  CHECK(y.device() == cpu(1));
  CHECK(y.grad_fn()->name() == "ToDeviceBackward");
  sum(y).backward();
  CHECK(x.grad().device() == cpu(0));
  CHECK(x.to(cpu(0)).is_same(x));
  CHECK(x.to(DType::f64).is_same(x));
  CHECK(x.to(DType::f32).grad_fn()->name() == "ToDTypeBackward");
  CHECK_FALSE(x.to(DType::i64).requires_grad());  // integers carry no gradient
  CHECK(x.clone().grad_fn()->name() == "CloneBackward");
  CHECK(from_vector<float>({1.5f, -2.5f}).to(DType::i64).to_vector<int64_t>() == std::vector<int64_t>{1, -2});
}

namespace {

// y = 2x, but its backward claims dy/dx = 3.
class WrongScaleBackward final : public autograd::Node {
 public:
  autograd::TensorList apply(autograd::TensorList&& grads) override { return {grads.at(0) * 3.0}; }
  std::string name() const override { return "WrongScaleBackward"; }
};

Tensor wrongly_doubled(const Tensor& x) {
  Tensor y;
  {
    NoGradGuard no_grad;
    y = x * 2.0;
  }
  if (autograd::needs_grad({x})) autograd::record(std::make_shared<WrongScaleBackward>(), {x}, {y});
  return y;
}

}  // namespace

TEST_CASE("gradcheck fails for a wrong gradient and says where", "[gradcheck][meta]") {
  Tensor b = input({3});
  GradcheckResult result = gradcheck([](const Inputs& x) { return x[0] + wrongly_doubled(x[1]); }, {input({3}), b});
  CHECK_FALSE(result.ok);
  CHECK_THAT(result.message, Contains("input 1") && Contains("element 0") && Contains("analytic") &&
                                 Contains("numeric") && Contains("f64[3] on cpu:0"));
  // The same function with the right gradient passes.
  CHECK(gradcheck([](const Inputs& x) { return x[0] + x[1] * 2.0; }, {input({3}), b}).ok);
  // The caller's gradients are left as they were.
  CHECK_FALSE(b.grad().defined());
}

TEST_CASE("gradcheck treats unreached inputs as zero gradients, consistently", "[gradcheck][meta]") {
  // An unused input: no gradient reaches it, and its numeric gradient is 0 too.
  CHECK(gradcheck([](const Inputs& x) { return x[0] * 2.0; }, {input({2}), input({3})}).ok);
  // No input reached at all (a constant output).
  CHECK(gradcheck([](const Inputs&) { return ones({2}, {.dtype = DType::f64}); }, {input({2})}).ok);
  // A detached use: backward does not reach the input, but the output depends on it.
  GradcheckResult result = gradcheck([](const Inputs& x) { return x[0].detach() * x[1]; }, {input({2}), input({2})});
  CHECK_FALSE(result.ok);
  CHECK_THAT(result.message, Contains("input 0") && Contains("undefined"));
}

TEST_CASE("gradcheck rejects inputs it cannot perturb", "[gradcheck][meta]") {
  Fn identity = [](const Inputs& x) { return x[0]; };
  REQUIRE_THROWS_WITH(gradcheck(identity, {leaf(zeros({2}))}),
                      Contains("input 0 must be an f64 CPU leaf") && Contains("f32[2]"));
  REQUIRE_THROWS_WITH(gradcheck(identity, {uniform({2}, 0, 1)}), Contains("does not require grad"));
  REQUIRE_THROWS_WITH(gradcheck(identity, {input({2}) * 2.0}), Contains("not a leaf"));
  REQUIRE_THROWS_WITH(gradcheck(identity, {leaf(uniform({1}, 0, 1).expand({3}))}), Contains("expanded"));
}
