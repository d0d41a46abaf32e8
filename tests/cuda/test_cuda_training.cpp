// End to end on cuda:0: lenet-relu (conv2d, relu, avg pooling, linear, cross-entropy) and
// resnet18 (batch norm, residual adds, adaptive pooling) trained for three SGD steps from the
// same seed on the CPU and on the GPU end with the same parameters. TF32 stays off (the
// default), so f32 results differ only by rounding.
#include <catch2/catch.hpp>

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

// The model after kSteps steps on `device` over the given batch; built from kSeed on the CPU
// and then moved, so both runs start from the very same parameters.
std::shared_ptr<nn::Module> train(const std::string& name, Device device, const Tensor& images,
                                  const Tensor& labels) {
  manual_seed(kSeed);
  std::shared_ptr<nn::Module> model = nn::models::make(name);
  model->to(device);
  optim::SGD sgd(model->parameters(), {.lr = 0.1, .momentum = 0.9});
  const Tensor x = images.to(device), y = labels.to(device);
  for (int step = 0; step < kSteps; ++step) {
    sgd.zero_grad();
    Tensor loss = nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    sgd.step();
  }
  return model;
}

}  // namespace

TEST_CASE("lenet-relu and resnet18 train to the same parameters on cuda:0 as on the CPU", "[cuda]") {
  REQUIRE_FALSE(cuda::allow_tf32());
  const std::string name = GENERATE(as<std::string>{}, "lenet-relu", "resnet18");
  INFO(name);
  manual_seed(7);
  const Tensor images = randn({16, 1, 28, 28});
  std::vector<int64_t> classes;
  for (int64_t i = 0; i < 16; ++i) classes.push_back((i * 7) % 10);
  const Tensor labels = from_vector(classes, {16}, {.dtype = DType::i64});

  const auto on_cpu = train(name, cpu(), images, labels);
  const int64_t declined_before = cuda::cudnn_declined();
  const auto on_gpu = train(name, cuda_device(0), images, labels);
  // Every convolution and batch norm of the models ran in cuDNN, not in a slower fallback.
  CHECK(cuda::cudnn_declined() == declined_before);
  const auto cpu_params = on_cpu->named_parameters(), gpu_params = on_gpu->named_parameters();
  REQUIRE(cpu_params.size() == gpu_params.size());
  for (size_t p = 0; p < cpu_params.size(); ++p) {
    const std::vector<float> expected = cpu_params[p].second.to_vector<float>();
    const std::vector<float> actual = gpu_params[p].second.to_vector<float>();
    REQUIRE(expected.size() == actual.size());
    int64_t bad = 0;
    for (size_t i = 0; i < expected.size(); ++i)
      bad += std::abs(actual[i] - expected[i]) > 1e-5 + 1e-4 * std::abs(expected[i]);
    INFO(cpu_params[p].first << ": " << bad << " of " << expected.size() << " values differ by more than 1e-4 relative (+ 1e-5)");
    CHECK(bad == 0);
  }
}
