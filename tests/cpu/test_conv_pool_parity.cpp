// conv2d and pooling with their options against PyTorch 1.13 (Debian's python3-torch):
//  - tests/golden/conv_pool.safetensors, written by tools/make_conv_pool_golden.py, holds for each
//    case its options, its f64 inputs, an upstream gradient and torch's outputs and gradients (and
//    the max pools' indices). duet runs every case in f64, within 1e-12, and in f32, within 1e-5.
//  - values printed by torch inline, where each test names the torch call.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "duet/duet.h"
#include "duet/kernels/nn_kernels.h"
#include "duet/nn/functional.h"
#include "duet/nn/safetensors.h"

using namespace duet;
namespace F = duet::nn::functional;

namespace {

// One case of the file: "<op>.<name>" and its tensors by field ("x", "out", ...).
struct GoldenCase {
  std::string op, name;
  std::map<std::string, Tensor> fields;

  const Tensor& at(const std::string& field) const { return fields.at(field); }
  bool has(const std::string& field) const { return fields.count(field) > 0; }
  std::vector<int64_t> params() const { return at("params").to_vector<int64_t>(); }
};

std::vector<GoldenCase> load_cases() {
  const nn::SafeTensors golden = nn::load_safetensors(DUET_SOURCE_DIR "/tests/golden/conv_pool.safetensors");
  REQUIRE(golden.metadata.at("format") == "duet-golden");
  REQUIRE(golden.metadata.at("version") == "1");
  std::map<std::string, GoldenCase> cases;
  for (const auto& [key, tensor] : golden.tensors) {
    const size_t op_end = key.find('.'), field_start = key.rfind('.');
    GoldenCase& c = cases[key.substr(0, field_start)];
    c.op = key.substr(0, op_end);
    c.name = key.substr(0, field_start);
    c.fields[key.substr(field_start + 1)] = tensor;
  }
  std::vector<GoldenCase> out;
  for (auto& [name, c] : cases) out.push_back(std::move(c));
  return out;
}

// max |got - want| over max |want|.
double relative_error(const Tensor& got, const Tensor& want) {
  REQUIRE(got.sizes() == want.sizes());
  const std::vector<double> a = got.to_vector<double>(), b = want.to_vector<double>();
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return scale == 0 ? diff : diff / scale;
}

F::Conv2dParams conv_params(const std::vector<int64_t>& p) {
  return {.stride = {p[0], p[1]}, .padding = {p[2], p[3]}, .dilation = {p[4], p[5]}, .groups = p[6]};
}

F::Pool2dParams pool_params(const std::vector<int64_t>& p) {
  return {.kernel = {p[0], p[1]},
          .stride = {p[2], p[3]},
          .padding = {p[4], p[5]},
          .ceil_mode = p[6] != 0,
          .count_include_pad = p[7] != 0,
          .dilation = {p[8], p[9]},
          .divisor_override = p[10]};
}

// The case's op on `inputs` (x, then weight and bias for conv2d), as duet's user calls it.
Tensor run_op(const GoldenCase& c, const std::vector<Tensor>& inputs) {
  const std::vector<int64_t> p = c.params();
  const Tensor& x = inputs[0];
  if (c.op == "conv2d") return F::conv2d(x, inputs[1], inputs.size() > 2 ? inputs[2] : Tensor(), conv_params(p));
  if (c.op == "max_pool2d") return F::max_pool2d(x, pool_params(p));
  if (c.op == "avg_pool2d") return F::avg_pool2d(x, pool_params(p));
  if (c.op == "adaptive_avg_pool2d") return F::adaptive_avg_pool2d(x, {p[0], p[1]});
  if (c.op == "adaptive_max_pool2d") return F::adaptive_max_pool2d(x, {p[0], p[1]});
  FAIL("unknown op " << c.op);
  return {};
}

// The indices duet's max-pool kernels pick for the case's input.
Tensor max_indices(const GoldenCase& c, const Tensor& out_like) {
  const std::vector<int64_t> p = c.params();
  Tensor out = empty(out_like.sizes(), {.dtype = DType::f64});
  Tensor indices = empty(out_like.sizes(), {.dtype = DType::i64});
  if (c.op == "max_pool2d") {
    const kernels::Pool2dGeometry g{.kernel = {p[0], p[1]},
                                    .stride = {p[2], p[3]},
                                    .padding = {p[4], p[5]},
                                    .ceil_mode = p[6] != 0,
                                    .dilation = {p[8], p[9]}};
    kernels::max_pool2d_forward(c.at("x"), g, out, indices);
  } else {
    kernels::adaptive_max_pool2d_forward(c.at("x"), out, indices);
  }
  return indices;
}

}  // namespace

TEST_CASE("conv2d and pooling options match PyTorch, forward and backward", "[golden][nn]") {
  const std::vector<GoldenCase> cases = load_cases();
  REQUIRE(cases.size() == 26);
  for (const DType dtype : {DType::f64, DType::f32}) {
    const double tolerance = dtype == DType::f64 ? 1e-12 : 1e-5;
    for (const GoldenCase& c : cases) {
      INFO(c.name << " in " << dtype_name(dtype));
      std::vector<Tensor> inputs;
      std::vector<std::string> grad_names;
      for (const char* field : {"x", "weight", "bias"}) {
        if (!c.has(field)) continue;
        Tensor input = c.at(field).detach().to(dtype);  // a leaf of its own, the file's tensor untouched
        input.requires_grad_();
        inputs.push_back(input);
        grad_names.push_back(std::string("grad_") + field);
      }
      Tensor out = run_op(c, inputs);
      CHECK(relative_error(out, c.at("out")) < tolerance);
      out.backward(c.at("grad_out").to(dtype));
      for (size_t i = 0; i < inputs.size(); ++i) {
        INFO(grad_names[i]);
        CHECK(relative_error(inputs[i].grad(), c.at(grad_names[i])) < tolerance);
      }
      if (c.has("indices") && dtype == DType::f64) {
        CHECK(max_indices(c, c.at("out")).to_vector<int64_t>() == c.at("indices").to_vector<int64_t>());
      }
    }
  }
}

TEST_CASE("max pooling routes a NaN window's gradient to its last NaN, as torch", "[parity][nn]") {
  // x = [[nan, 5, 1], [nan, 7, nan]]; torch.nn.functional.max_pool2d(x, 2, 1, return_indices=True) and
  // adaptive_max_pool2d(x, (1, 2), return_indices=True) both give nan, nan at indices 3 and 5.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const bool adaptive : {false, true}) {
    INFO((adaptive ? "adaptive_max_pool2d" : "max_pool2d"));
    Tensor x = from_vector<double>({nan, 5, 1, nan, 7, nan}, {1, 1, 2, 3});
    x.requires_grad_();
    Tensor out = adaptive ? F::adaptive_max_pool2d(x, {1, 2}) : F::max_pool2d(x, {.kernel = 2, .stride = 1});
    for (double v : out.to_vector<double>()) CHECK(std::isnan(v));
    sum(out).backward();
    CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 0, 0, 1, 0, 1});
  }
}
