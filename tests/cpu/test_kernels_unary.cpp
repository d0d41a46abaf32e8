// The CPU unary kernels, forward and backward, called directly (no autograd), against hand-computed values.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "duet/kernels/exp_f32.h"
#include "duet/kernels/kernels.h"
#include "kernel_test_tensors.h"

using namespace duet;
using namespace duet::kernels;
using namespace duet::kernel_test;
using Catch::Matchers::Contains;

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
  check_close(run(UnaryOp::sigmoid, x), {1 / (1 + std::exp(2.0)), 1 / (1 + std::exp(0.5)), 0.5,
                                         1 / (1 + std::exp(-0.5)), 1 / (1 + std::exp(-3.0))});
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
  check_close(grad_of(UnaryOp::sigmoid), {s(-1) * (1 - s(-1)), 2 * s(0.5) * (1 - s(0.5)), 3 * s(2) * (1 - s(2))});

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
