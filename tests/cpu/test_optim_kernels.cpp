// The fused optimizer kernels (kernels/optim_kernels.h) against the unfused updates spelled with
// duet's elementwise ops, as optim::SGD and optim::Adam computed them before fusion. Both round
// every step alike, so the CPU results must agree bit for bit, in f64 and f32, over several
// steps and every option that changes the math; sizes cover the scalar tail, one chunk and a
// loop split over the thread pool.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "duet/duet.h"
#include "duet/kernels/optim_kernels.h"
#include "optim_configs.h"

using namespace duet;
using Catch::Matchers::Contains;
using test::adam_configs;
using test::bias_corrected;
using test::describe;
using test::sgd_configs;

namespace {

const std::vector<int64_t> kSizes = {1, 7, 1000, 70001};
constexpr int kSteps = 4;

void require_bitwise_equal(const Tensor& actual, const Tensor& expected, const std::string& what) {
  REQUIRE(actual.sizes() == expected.sizes());
  REQUIRE(actual.dtype() == expected.dtype());
  Tensor a = actual.contiguous(), e = expected.contiguous();
  const size_t bytes = a.element_size();
  int64_t first = -1;
  for (int64_t i = 0; i < a.numel() && first < 0; ++i) {
    if (std::memcmp(static_cast<char*>(a.data_ptr()) + i * bytes, static_cast<char*>(e.data_ptr()) + i * bytes,
                    bytes) != 0)
      first = i;
  }
  INFO(what << ": element " << first << " of " << a.numel() << " differs");
  CHECK(first == -1);
}

// Runs check(dtype, n, config) for f64 and f32, every size and every configuration.
template <class Config, class Check> void for_every_case(const std::vector<Config>& configs, Check&& check) {
  for (DType dtype : {DType::f64, DType::f32})
    for (int64_t n : kSizes)
      for (const Config& config : configs) check(dtype, n, config);
}

std::string label(const char* op, DType dtype, int64_t n, int step, const std::string& options) {
  return std::string(op) + " " + dtype_name(dtype) + "[" + std::to_string(n) + "] step " + std::to_string(step) + " " +
         options;
}

// optim::SGD::step before fusion, for one parameter.
void sgd_reference(const Tensor& p, Tensor g, Tensor& buf, const kernels::SgdUpdateArgs& a) {
  if (a.maximize) g = -g;
  if (a.weight_decay != 0) g = g + p * a.weight_decay;
  if (a.momentum != 0) {
    if (a.first_step) {
      buf.copy_(g);
    } else {
      buf.mul_(a.momentum);
      buf.add_(g, 1 - a.dampening);
    }
    g = a.nesterov ? g + buf * a.momentum : buf;
  }
  p.add_(g, -a.lr);
}

// optim::Adam::step before fusion, for one parameter; with amsgrad, torch.optim's in 1.13.
void adam_reference(const Tensor& p, Tensor g, const Tensor& m, const Tensor& v, const Tensor& max_v,
                    const kernels::AdamUpdateArgs& a) {
  if (a.maximize) g = -g;
  if (a.weight_decay != 0) {
    if (a.decoupled_weight_decay) p.mul_(1 - a.lr * a.weight_decay);
    else g = g + p * a.weight_decay;
  }
  m.mul_(a.beta1);
  m.add_(g, 1 - a.beta1);
  v.mul_(a.beta2);
  v.add_(g * g, 1 - a.beta2);
  if (a.amsgrad) max_v.copy_(maximum(max_v, v));
  Tensor denom = sqrt(a.amsgrad ? max_v : v) / std::sqrt(a.bias_correction2) + a.eps;
  p.add_(m / denom, -a.lr / a.bias_correction1);
}

}  // namespace

TEST_CASE("fused SGD equals the unfused ops bit for bit, every option, f64 and f32", "[optim][kernels]") {
  Generator gen(11);
  for_every_case(sgd_configs(), [&](DType dtype, int64_t n, const kernels::SgdUpdateArgs& config) {
    Tensor p_fused = randn({n}, {.dtype = dtype}, &gen), p_ref = p_fused.clone();
    Tensor buf_fused = zeros({n}, {.dtype = dtype}), buf_ref = zeros({n}, {.dtype = dtype});
    for (int step = 0; step < kSteps; ++step) {
      Tensor g = randn({n}, {.dtype = dtype}, &gen);
      kernels::SgdUpdateArgs args = config;
      args.first_step = step == 0;
      kernels::sgd_update(p_fused, g, config.momentum != 0 ? buf_fused : Tensor(), args);
      sgd_reference(p_ref, g, buf_ref, args);
      std::string what = label("sgd", dtype, n, step, describe(config));
      require_bitwise_equal(p_fused, p_ref, what + " param");
      require_bitwise_equal(buf_fused, buf_ref, what + " momentum buffer");
    }
  });
}

TEST_CASE("fused Adam and AdamW equal the unfused ops bit for bit, f64 and f32", "[optim][kernels]") {
  Generator gen(12);
  for_every_case(adam_configs(), [&](DType dtype, int64_t n, const kernels::AdamUpdateArgs& config) {
    Tensor p_fused = randn({n}, {.dtype = dtype}, &gen), p_ref = p_fused.clone();
    Tensor m_fused = zeros({n}, {.dtype = dtype}), v_fused = zeros({n}, {.dtype = dtype});
    Tensor m_ref = zeros({n}, {.dtype = dtype}), v_ref = zeros({n}, {.dtype = dtype});
    Tensor max_fused = zeros({n}, {.dtype = dtype}), max_ref = zeros({n}, {.dtype = dtype});
    for (int step = 1; step <= kSteps; ++step) {
      // Large gradients first, small ones later: amsgrad's maximum then differs from v.
      Tensor g = randn({n}, {.dtype = dtype}, &gen) * (step <= 2 ? 3.0 : 0.1);
      const kernels::AdamUpdateArgs args = bias_corrected(config, step);
      kernels::adam_update(p_fused, g, m_fused, v_fused, config.amsgrad ? max_fused : Tensor(), args);
      adam_reference(p_ref, g, m_ref, v_ref, max_ref, args);
      std::string what = label("adam", dtype, n, step, describe(config));
      require_bitwise_equal(p_fused, p_ref, what + " param");
      require_bitwise_equal(m_fused, m_ref, what + " exp_avg");
      require_bitwise_equal(v_fused, v_ref, what + " exp_avg_sq");
      require_bitwise_equal(max_fused, max_ref, what + " max_exp_avg_sq");
    }
  });
}

TEST_CASE("fused updates on a 2-D parameter and an empty one", "[optim][kernels]") {
  Generator gen(13);
  Tensor p = randn({33, 17}, {}, &gen), g = randn({33, 17}, {}, &gen);
  Tensor expected = p.clone(), no_buffer;
  sgd_reference(expected, g, no_buffer, {.lr = 0.1});
  kernels::sgd_update(p, g, Tensor(), {.lr = 0.1});
  require_bitwise_equal(p, expected, "sgd on f32[33, 17]");

  Tensor empty_p = zeros({0, 4});
  kernels::adam_update(empty_p, zeros({0, 4}), zeros({0, 4}), zeros({0, 4}), Tensor(), {.lr = 0.1});
  CHECK(empty_p.numel() == 0);
}

TEST_CASE("fused updates name the op and the operands they refuse", "[optim][kernels][errors]") {
  Tensor p = zeros({2, 3}), g = zeros({2, 3}), m = zeros({2, 3}), v = zeros({2, 3});
  const kernels::AdamUpdateArgs adam{.lr = 0.1};
  const kernels::SgdUpdateArgs sgd{.lr = 0.1, .momentum = 0.9};

  REQUIRE_THROWS_WITH(
      kernels::adam_update(p, zeros({2, 3}, {.device = cpu(1)}), m, v, Tensor(), adam),
      Contains("adam_update: grad f32[2, 3] on cpu:1 and param f32[2, 3] on cpu:0 are on different devices"));
  REQUIRE_THROWS_WITH(kernels::adam_update(p, g, zeros({2, 3}, {.dtype = DType::f64}), v, Tensor(), adam),
                      Contains("adam_update: exp_avg f64[2, 3] on cpu:0 does not match param f32[2, 3] on cpu:0"));
  REQUIRE_THROWS_WITH(kernels::adam_update(p, g, m, zeros({3, 2}), Tensor(), adam),
                      Contains("adam_update: exp_avg_sq f32[3, 2] on cpu:0 does not match param"));
  REQUIRE_THROWS_WITH(kernels::adam_update(p, zeros({3, 2}).t(), m, v, Tensor(), adam),
                      Contains("adam_update: grad f32[2, 3] on cpu:0 is not contiguous"));
  REQUIRE_THROWS_WITH(kernels::adam_update(p, g, m, m, Tensor(), adam),
                      Contains("adam_update: exp_avg_sq and exp_avg share storage"));
  const kernels::AdamUpdateArgs amsgrad{.lr = 0.1, .amsgrad = true};
  REQUIRE_THROWS_WITH(kernels::adam_update(p, g, m, v, Tensor(), amsgrad),
                      Contains("adam_update: amsgrad needs max_exp_avg_sq"));
  REQUIRE_THROWS_WITH(kernels::adam_update(p, g, m, v, zeros({3}), amsgrad),
                      Contains("adam_update: max_exp_avg_sq f32[3] on cpu:0 does not match param"));
  REQUIRE_THROWS_WITH(kernels::adam_update(p, g, m, v, v, amsgrad),
                      Contains("adam_update: max_exp_avg_sq and exp_avg_sq share storage"));
  Tensor ints = zeros({2, 3}, {.dtype = DType::i64});
  REQUIRE_THROWS_WITH(kernels::sgd_update(ints, ints, ints, sgd),
                      Contains("sgd_update: expected a floating dtype (f32 or f64), got param i64[2, 3] on cpu:0"));
  REQUIRE_THROWS_WITH(kernels::sgd_update(p, g, Tensor(), sgd),
                      Contains("sgd_update: momentum 0.9 needs a momentum buffer"));
  REQUIRE_THROWS_WITH(kernels::sgd_update(p, g, zeros({6}), sgd),
                      Contains("sgd_update: momentum_buffer f32[6] on cpu:0 does not match param"));
  // Without momentum the buffer is not an operand: a mismatched one is ignored, not checked.
  CHECK_NOTHROW(kernels::sgd_update(p, g, zeros({6}), {.lr = 0.1}));
}
