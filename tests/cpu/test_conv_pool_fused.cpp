// functional::conv2d_activated_avg_pool2d, the convolution, activation and average pooling in one
// op whose backward computes the convolution again (kernels::conv2d_avg_pool2d_*), against the
// three ops in turn: on the CPU's fused kernels (stride-1 convolutions, 2x2 pooling with even and
// odd sizes, and the general pooling) and on the separate kernels it falls back to (a strided
// convolution); values and every gradient in f32, and f64 gradchecks.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "duet/duet.h"
#include "duet/nn/functional.h"

using namespace duet;
namespace F = duet::nn::functional;
using Catch::Matchers::Contains;

namespace {

struct FusedCase {
  std::string what;
  Shape x, w;  // [N, C, H, W], [K, C / groups, kh, kw]
  F::Conv2dParams conv;
  F::Pool2dParams pool;
};

const std::vector<FusedCase> kCases = {
    {"LeNet-ReLU's first layer: 2x2 over an even width, the pairs of whole grid rows",
     {3, 1, 28, 28},
     {20, 1, 3, 3},
     {},
     {.kernel = 2}},
    {"an odd last row that no window reaches; 17 filters", {2, 2, 9, 8}, {17, 2, 3, 3}, {.padding = 1}, {.kernel = 2}},
    {"2x2 over an odd width, row pair by row pair", {1, 2, 8, 9}, {3, 2, 3, 3}, {}, {.kernel = 2}},
    {"one row of windows over an odd width", {2, 1, 4, 9}, {2, 1, 3, 3}, {}, {.kernel = 2}},
    {"overlapping, padded, ceil-mode windows: the general pooling",
     {2, 3, 8, 7},
     {4, 3, 3, 3},
     {.padding = 1},
     {.kernel = 3, .stride = 2, .padding = 1, .ceil_mode = true, .count_include_pad = false}},
    {"a non-square kernel and padding on one axis", {2, 3, 7, 9}, {5, 3, 3, 2}, {.padding = {1, 0}}, {.kernel = 2}},
    {"a strided convolution: the separate kernels", {2, 3, 9, 9}, {4, 3, 3, 3}, {.stride = 2}, {.kernel = 2}},
    {"a grouped convolution: the separate kernels", {1, 4, 8, 8}, {6, 2, 3, 3}, {.groups = 2}, {.kernel = 2}},
};

// The activations the op takes, as the separate ops run them (none: the convolution's output).
struct Activation {
  std::optional<kernels::UnaryOp> op;
  Tensor (*separate)(const Tensor&);
};
Tensor identity(const Tensor& t) { return t; }
const std::vector<Activation> kActivations = {{kernels::UnaryOp::relu, relu},
                                              {kernels::UnaryOp::sigmoid, sigmoid},
                                              {kernels::UnaryOp::tanh, tanh},
                                              {std::nullopt, identity}};

Tensor uniform(const Shape& shape, DType dtype, uint64_t seed) {
  Generator g(seed);
  NoGradGuard no_grad;
  return rand(shape, {.dtype = dtype}, &g) * 2.0 - 1.0;
}

Tensor leaf(Tensor t) {
  t.requires_grad_();
  return t;
}

// |a - b| within `tolerance` of the largest |b|: the fused kernels and the separate ones add the
// same products, in orders that may differ.
void check_same(const Tensor& a, const Tensor& b, double tolerance) {
  const std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>();
  REQUIRE(av.size() == bv.size());
  double scale = 1, gap = 0;
  for (double v : bv) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < av.size(); ++i) gap = std::max(gap, std::abs(av[i] - bv[i]));
  INFO("largest gap " << gap << " against a largest value of " << scale);
  CHECK(gap <= tolerance * scale);
}

std::string name_of(const Activation& a) { return a.op ? kernels::name(*a.op) : "none"; }

}  // namespace

TEST_CASE("conv2d_activated_avg_pool2d equals conv2d, the activation and avg_pool2d, with every gradient",
          "[nn][conv]") {
  uint64_t seed = 1;
  for (const FusedCase& c : kCases) {
    for (const Activation& a : kActivations) {
      INFO(c.what << ", activation " << name_of(a));
      Tensor x = leaf(uniform(c.x, DType::f32, seed++)), w = leaf(uniform(c.w, DType::f32, seed++));
      Tensor b = leaf(uniform({c.w[0]}, DType::f32, seed++));
      Tensor x2 = leaf(x.detach().clone()), w2 = leaf(w.detach().clone()), b2 = leaf(b.detach().clone());
      Tensor fused = F::conv2d_activated_avg_pool2d(x, w, b, c.conv, a.op, c.pool);
      Tensor separate = F::avg_pool2d(a.separate(F::conv2d(x2, w2, b2, c.conv)), c.pool);
      REQUIRE(fused.sizes() == separate.sizes());
      check_same(fused, separate, 1e-5);
      const Tensor grad = uniform(fused.sizes(), DType::f32, seed++);
      sum(fused * grad).backward();
      sum(separate * grad).backward();
      check_same(x.grad(), x2.grad(), 1e-5);
      check_same(w.grad(), w2.grad(), 1e-5);
      check_same(b.grad(), b2.grad(), 1e-5);
    }
  }
}

TEST_CASE("conv2d_activated_avg_pool2d passes gradcheck in f64", "[nn][conv][gradcheck]") {
  uint64_t seed = 100;
  for (const FusedCase& c : kCases) {
    // Batch 1 and at most 9x9 images: each input element is a finite difference of its own.
    Shape xs = c.x;
    xs[0] = 1;
    xs[2] = std::min<int64_t>(xs[2], 9);
    xs[3] = std::min<int64_t>(xs[3], 9);
    for (const Activation& a : kActivations) {
      INFO(c.what << ", activation " << name_of(a));
      const F::Conv2dParams conv = c.conv;
      const F::Pool2dParams pool = c.pool;
      const std::optional<kernels::UnaryOp> op = a.op;
      const GradcheckResult result = gradcheck(
          [conv, op, pool](const std::vector<Tensor>& in) {
            return F::conv2d_activated_avg_pool2d(in[0], in[1], in[2], conv, op, pool);
          },
          {leaf(uniform(xs, DType::f64, seed++)), leaf(uniform(c.w, DType::f64, seed++)),
           leaf(uniform({c.w[0]}, DType::f64, seed++))});
      INFO(result.message);
      CHECK(result.ok);
    }
  }
}

TEST_CASE("conv2d_activated_avg_pool2d without a bias, and with only some gradients wanted", "[nn][conv]") {
  const FusedCase& lenet = kCases[0];
  Tensor x = leaf(uniform(lenet.x, DType::f32, 7)), w = uniform(lenet.w, DType::f32, 8);  // w: no gradient
  Tensor x2 = leaf(x.detach().clone());
  const auto relu_op = kernels::UnaryOp::relu;
  Tensor fused = F::conv2d_activated_avg_pool2d(x, w, Tensor(), {}, relu_op, lenet.pool);
  Tensor separate = F::avg_pool2d(relu(F::conv2d(x2, w)), lenet.pool);
  check_same(fused, separate, 1e-5);
  sum(fused).backward();
  sum(separate).backward();
  check_same(x.grad(), x2.grad(), 1e-5);
  CHECK_FALSE(w.grad().defined());

  // Only the weight's gradient (an input that needs none: the first layer's).
  Tensor x3 = uniform(lenet.x, DType::f32, 9), w3 = leaf(uniform(lenet.w, DType::f32, 10));
  Tensor w4 = leaf(w3.detach().clone());
  sum(F::conv2d_activated_avg_pool2d(x3, w3, Tensor(), {}, relu_op, lenet.pool)).backward();
  sum(F::avg_pool2d(relu(F::conv2d(x3, w4)), lenet.pool)).backward();
  check_same(w3.grad(), w4.grad(), 1e-5);

  // No gradient at all: no graph.
  NoGradGuard no_grad;
  CHECK_FALSE(F::conv2d_activated_avg_pool2d(x, w, Tensor(), {}, relu_op, lenet.pool).requires_grad());
}

TEST_CASE("conv2d_activated_avg_pool2d refuses what conv2d and avg_pool2d refuse, naming what is wrong", "[nn][conv]") {
  Tensor x = zeros({1, 2, 6, 6}), w = zeros({3, 2, 3, 3});
  const auto relu_op = kernels::UnaryOp::relu;
  CHECK_THROWS_WITH(F::conv2d_activated_avg_pool2d(x, zeros({3, 1, 3, 3}), Tensor(), {}, relu_op, {.kernel = 2}),
                    Contains("conv2d: input f32[1, 2, 6, 6] on cpu:0 has 2 channels but weight"));
  CHECK_THROWS_WITH(F::conv2d_activated_avg_pool2d(x, w, Tensor(), {}, relu_op, {.kernel = 5}),
                    Contains("avg_pool2d: kernel 5 with padding 0 is larger than the convolution's output "
                             "[1, 3, 4, 4]"));
  CHECK_THROWS_WITH(F::conv2d_activated_avg_pool2d(x, w, Tensor(), {}, kernels::UnaryOp::exp, {.kernel = 2}),
                    Contains("conv2d_avg_pool2d_forward: unary op exp is not an activation a pooling can fuse"));
}
