// End to end on cuda:0: lenet-relu (conv2d, relu, avg pooling, linear, cross-entropy) and
// resnet18 (batch norm, residual adds, adaptive pooling) trained for three SGD steps from the
// same seed on the CPU and on the GPU, in f64 and in f32, end with the same parameters. TF32
// stays off (the default), so f32 results differ only by rounding.
//
// Why two dtypes. In f32, resnet18's early layers after three steps are not determined by the
// math but by rounding: their gradient is what is left after BatchNorm's backward subtracts the
// batch mean and the xhat-correlated part of the incoming gradient, through 20 BatchNorms, and
// the steps feed each difference back. Measured on the CPU (2026-12, this test's batch): the
// CPU's own f32 result is up to 18% of a tensor's largest value away from its f64 result, and two
// f32 CPU runs that differ only in how the thread pool splits the sums are 2% apart. A fixed
// f32 tolerance that the GPU's other summation orders always pass would pass bugs too. So:
//   - f64 is the tight check: the same comparison with rounding 1e-9 of the f32's. Two f64 CPU
//     runs with other thread splits are 1.6e-15 of scale apart; the bound is 1e-9 of each
//     tensor's largest value, which no bug that changes the math (a wrong eps, momentum, a
//     missing term: 1e-6 and more) can pass;
//   - f32 checks that the GPU's rounding error is of the CPU's size: its distance from the f64
//     result (the exact one, to f32's eyes) stays within 32 times the CPU's own f32 distance,
//     plus 1e-6 of scale. 32: the GPU sums in f32 what the CPU sums in double (BatchNorm's
//     statistics), which makes its starting errors up to log2(n) ~ 14 times larger, and 2 more
//     for luck; 1e-6 of scale covers tensors such as a conv bias before a BatchNorm, whose
//     gradient is zero but for rounding, so that the CPU's distance says nothing there. For
//     lenet-relu, with no BatchNorm, the CPU's f32 distance is 1e-7 of scale, so the bound is tight.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "duet/duet.h"
#include "duet/kernels/cuda/runtime.h"
#include "duet/nn/models/models.h"
#include "duet/optim/sgd.h"

using namespace duet;

namespace {

constexpr uint64_t kSeed = 42;
constexpr int kSteps = 3;
constexpr double kF64Bound = 1e-9;  // of a tensor's largest value
constexpr double kF32Factor = 32;   // times the CPU's own f32 rounding error
constexpr double kF32Floor = 1e-6;  // of a tensor's largest value

// `name` built from kSeed on the CPU, its parameters and floating buffers in `dtype`, on `device`:
// every run starts from the very same values (f32's, widened for f64).
std::shared_ptr<nn::Module> fresh_model(const std::string& name, DType dtype, Device device) {
  manual_seed(kSeed);
  const std::shared_ptr<nn::Module> base = nn::models::make(name);
  std::vector<Tensor> params, buffers;
  for (const Tensor& p : base->parameters()) params.push_back(p.detach().to(dtype).to(device).requires_grad_());
  for (const auto& [buffer_name, b] : base->named_buffers())
    buffers.push_back(!b.defined() ? b : is_floating(b.dtype()) ? b.to(dtype).to(device) : b.to(device));
  return base->replicate(params, buffers);
}

// Each parameter's values (as f64) after kSteps steps on `device` over the given batch.
std::vector<std::vector<double>> train(const std::string& name, DType dtype, Device device, const Tensor& images,
                                       const Tensor& labels) {
  const std::shared_ptr<nn::Module> model = fresh_model(name, dtype, device);
  optim::SGD sgd(model->parameters(), {.lr = 0.1, .momentum = 0.9});
  const Tensor x = images.to(dtype).to(device), y = labels.to(device);
  for (int step = 0; step < kSteps; ++step) {
    sgd.zero_grad();
    Tensor loss = nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    sgd.step();
  }
  std::vector<std::vector<double>> out;
  for (const Tensor& p : model->parameters()) out.push_back(p.to(cpu()).to(DType::f64).to_vector<double>());
  return out;
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

double max_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

struct Batch16 {
  Tensor images, labels;
};

Batch16 batch() {
  manual_seed(7);
  const Tensor images = randn({16, 1, 28, 28});
  std::vector<int64_t> classes;
  for (int64_t i = 0; i < 16; ++i) classes.push_back((i * 7) % 10);
  return {images, from_vector(classes, {16}, {.dtype = DType::i64})};
}

}  // namespace

TEST_CASE("lenet-relu and resnet18 train to the same parameters on cuda:0 as on the CPU", "[cuda]") {
  REQUIRE_FALSE(cuda::allow_tf32());
  const std::string name = GENERATE(as<std::string>{}, "lenet-relu", "resnet18");
  INFO(name);
  const auto [images, labels] = batch();
  const std::vector<std::string> names = [&] {
    std::vector<std::string> out;
    for (const auto& [n, p] : nn::models::make(name)->named_parameters()) out.push_back(n);
    return out;
  }();

  const auto exact = train(name, DType::f64, cpu(), images, labels);
  const auto cpu_f32 = train(name, DType::f32, cpu(), images, labels);
  const auto gpu_f64 = train(name, DType::f64, cuda_device(0), images, labels);
  const int64_t declined_before = cuda::cudnn_declined();
  const auto gpu_f32 = train(name, DType::f32, cuda_device(0), images, labels);
  // Every f32 convolution and batch norm ran in cuDNN, not in a slower fallback (f64 may not).
  CHECK(cuda::cudnn_declined() == declined_before);
  REQUIRE(exact.size() == names.size());
  REQUIRE(gpu_f64.size() == names.size());
  REQUIRE(gpu_f32.size() == names.size());

  for (size_t p = 0; p < names.size(); ++p) {
    const double scale = max_abs(exact[p]);
    const double f64_error = max_diff(gpu_f64[p], exact[p]);
    const double cpu_error = max_diff(cpu_f32[p], exact[p]), gpu_error = max_diff(gpu_f32[p], exact[p]);
    const double f32_bound = kF32Factor * cpu_error + kF32Floor * scale;
    INFO(names[p] << ": largest |value| " << scale << "; f64: GPU - CPU " << f64_error << " (bound "
                  << kF64Bound * scale << "); f32: CPU - exact " << cpu_error << ", GPU - exact " << gpu_error
                  << " (bound " << f32_bound << ")");
    CHECK(f64_error <= kF64Bound * scale);
    CHECK(gpu_error <= f32_bound);
  }
}
