// The PyTorch-parity behaviours of tests/cpu/test_pytorch_parity.cpp on cuda:0: the same ops at
// the same special values (NaN, signed zeros, base 0, negative divisors) give what the CPU gives,
// which those tests pin to PyTorch 1.13's values.
#include <catch2/catch.hpp>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "duet/duet.h"
#include "duet/nn/functional.h"
#include "duet/nn/layers.h"
#include "duet/optim/sgd.h"

using namespace duet;
using Catch::Matchers::Contains;

namespace {

const Device kGpu = cuda_device(0);
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

using Inputs = std::vector<Tensor>;
using Op = std::function<Tensor(const Inputs&)>;

// Runs `op` forward and, for floating inputs, backward from a gradient of ones, on the CPU and
// on the GPU over the same values; the outputs and every input's gradient must agree.
void check_on_gpu(const std::string& what, const Op& op, const Inputs& host_inputs) {
  INFO(what);
  auto run = [&](Device device, std::vector<Tensor>& grads) {
    Inputs inputs;
    for (const Tensor& t : host_inputs) {
      Tensor on = t.to(device);
      if (is_floating(on.dtype())) on.requires_grad_();
      inputs.push_back(on);
    }
    Tensor out = op(inputs);
    if (out.requires_grad()) sum(out).backward();
    for (const Tensor& t : inputs) grads.push_back(t.requires_grad() ? t.grad().to(cpu()) : Tensor());
    return out.detach().to(cpu());
  };
  std::vector<Tensor> cpu_grads, gpu_grads;
  Tensor expected = run(cpu(), cpu_grads), actual = run(kGpu, gpu_grads);
  REQUIRE(actual.dtype() == expected.dtype());
  const double tol = is_floating(expected.dtype()) ? test::rtol_for(expected.dtype()) : 0.0;
  test::require_close(actual, expected, tol, tol, what + ": forward");
  for (size_t i = 0; i < cpu_grads.size(); ++i) {
    if (!cpu_grads[i].defined()) continue;
    test::require_close(gpu_grads[i], cpu_grads[i], tol, tol, what + ": gradient of input " + std::to_string(i));
  }
}

Tensor values(const std::vector<double>& v, DType dtype) {
  return from_vector<double>(v, {static_cast<int64_t>(v.size())}).to(dtype);
}

}  // namespace

TEST_CASE("CUDA elementwise ops follow PyTorch at NaN, signed zeros and base 0, as the CPU does", "[cuda]") {
  for (DType dtype : {DType::f32, DType::f64}) {
    const std::string name = dtype_name(dtype);
    check_on_gpu("relu " + name, [](const Inputs& x) { return relu(x[0]); }, {values({kNaN, -1, -0.0, 0, 2}, dtype)});
    Tensor a = values({kNaN, 1, 2, 1, kNaN}, dtype), b = values({1, kNaN, 2, 3, kNaN}, dtype);
    check_on_gpu("maximum " + name, [](const Inputs& x) { return maximum(x[0], x[1]); }, {a, b});
    check_on_gpu("minimum " + name, [](const Inputs& x) { return minimum(x[0], x[1]); }, {a, b});
    check_on_gpu("pow " + name, [](const Inputs& x) { return pow(x[0], x[1]); },
                 {values({0, 0, 0, 0, 2}, dtype), values({2, 0, -1, -0.5, 3}, dtype)});
    check_on_gpu("floor_divide " + name, [](const Inputs& x) { return floor_divide(x[0], x[1]); },
                 {values({-7, 7, -7, 7, 1, -1, 0, 5.5, -5.5, 0.3, -0.0, 0}, dtype),
                  values({2, 2, -2, -2, 0, 0, 0, 2, 2, 0.1, 5, -5}, dtype)});
  }
  Tensor ia = from_vector<int64_t>({-7, 7, -7, 7, 6, -6, 0}), ib = from_vector<int64_t>({2, 2, -2, -2, -3, 3, -5});
  check_on_gpu("floor_divide i64", [](const Inputs& x) { return floor_divide(x[0], x[1]); }, {ia, ib});
  check_on_gpu("div i64", [](const Inputs& x) { return div(x[0], x[1]); }, {ia, ib});
  check_on_gpu("floor_divide u8", [](const Inputs& x) { return floor_divide(x[0], x[1]); },
               {from_vector<uint8_t>({1, 200}), from_vector<uint8_t>({2, 3})});
  // relu keeps NaN on the GPU's own: torch.relu(nan) = nan.
  CHECK(std::isnan(relu(values({kNaN}, DType::f32).to(kGpu)).item<float>()));
}

TEST_CASE("CUDA sums integers into i64 and refuses their mean", "[cuda]") {
  Tensor bytes = ones({100003}, {.dtype = DType::u8, .device = kGpu});  // long enough to split into parts
  Tensor total = sum(bytes);
  CHECK(total.dtype() == DType::i64);
  CHECK(total.item<int64_t>() == 100003);
  check_on_gpu("sum u8 over a dim", [](const Inputs& x) { return sum(x[0], {1}); },
               {from_vector<double>({1, 2, 3, 250, 251, 252}, {2, 3}).to(DType::u8)});
  CHECK_THROWS_WITH(mean(bytes), Contains("mean: could not infer output dtype"));
}

namespace {

// Three SGD steps from an optimizer built BEFORE the model moves to `device`.
nn::Sequential trained_after_move(Device device, std::vector<Tensor>& params_before) {
  manual_seed(3);
  nn::Sequential model(nn::Conv2d(nn::Conv2dOptions(1, 2, 3)), nn::BatchNorm2d(2), nn::ReLU(), nn::Flatten(),
                       nn::Linear(2 * 2 * 2, 3));
  params_before = model->parameters();
  optim::SGD sgd(params_before, {.lr = 0.1, .momentum = 0.9});
  model->to(device);
  manual_seed(5);
  const Tensor x = randn({6, 1, 4, 4}).to(device);
  const Tensor y = from_vector<int64_t>({0, 1, 2, 0, 1, 2}, {6}).to(device);
  for (int step = 0; step < 3; ++step) {
    sgd.zero_grad();
    nn::functional::cross_entropy(model->forward(x), y).backward();
    sgd.step();
  }
  return model;
}

}  // namespace

TEST_CASE("Module::to(cuda) moves parameters in place, so an optimizer built before it trains the model", "[cuda]") {
  std::vector<Tensor> on_cpu, on_gpu;
  nn::Sequential reference = trained_after_move(cpu(), on_cpu);
  nn::Sequential model = trained_after_move(kGpu, on_gpu);
  const std::vector<Tensor> params = model->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    CHECK(params[i].is_same(on_gpu[i]));
    CHECK(on_gpu[i].device() == kGpu);
  }
  const nn::NamedTensors want = reference->state_dict(), got = model->state_dict();
  REQUIRE(want.size() == got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    CHECK(got[i].second.device() == kGpu);
    test::require_close(got[i].second.to(cpu()), want[i].second, 1e-4, 1e-5, "after training: " + want[i].first);
  }
}
