// The PyTorch 1.13 cases of tests/golden/options.safetensors (tests/options_golden.cpp) run on a
// GPU: every option's CUDA path against PyTorch's values, as tests/cpu/test_options_golden.cpp
// runs the CPU's; and the cumulative batch norm against the CPU layer. (The kernels' own
// CUDA-versus-CPU tests: test_cuda_nn.cpp, test_cuda_reduce_matmul.cpp, test_cuda_optim.cpp.)
#include <catch2/catch.hpp>

#include "duet/duet.h"
#include "options_golden.h"

using namespace duet;

TEST_CASE("CUDA cross_entropy's options match PyTorch", "[cuda]") { test::check_cross_entropy_golden(cuda_device(0)); }

TEST_CASE("CUDA amin, min, argmin, var and std match PyTorch", "[cuda]") {
  test::check_reductions_golden(cuda_device(0));
}

TEST_CASE("CUDA Adam and AdamW with amsgrad match torch.optim", "[cuda]") {
  test::check_amsgrad_golden(cuda_device(0));
}

TEST_CASE("CUDA SGD, Adam and AdamW with maximize follow torch.optim's trajectory", "[cuda]") {
  test::check_maximize_golden(cuda_device(0));
}

TEST_CASE("CUDA BatchNorm2d with momentum None keeps PyTorch's cumulative average", "[cuda]") {
  test::check_cumulative_batch_norm_golden(cuda_device(0));
}

TEST_CASE("CUDA BatchNorm2d with momentum None matches the CPU layer step by step", "[cuda]") {
  nn::BatchNorm2d on_cpu(4, nn::BatchNormOptions{.momentum = std::nullopt});
  auto on_gpu = on_cpu->clone(cuda_device(0));
  Generator generator(77);
  for (int step = 0; step < 5; ++step) {
    const Tensor x = randn({3, 4, 5, 2}, {}, &generator) * (1.0 + step);
    const Tensor want = on_cpu->forward(x);
    const Tensor got = on_gpu->forward(x.to(cuda_device(0))).to(cpu());
    const std::vector<float> a = got.to_vector<float>(), b = want.to_vector<float>();
    for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == Approx(b[i]).margin(1e-5));
  }
  const nn::NamedTensors cpu_buffers = on_cpu->named_buffers(), gpu_buffers = on_gpu->named_buffers();
  for (size_t i = 0; i < cpu_buffers.size(); ++i) {
    INFO(cpu_buffers[i].first);
    const std::vector<double> a = gpu_buffers[i].second.to(cpu()).to(DType::f64).to_vector<double>();
    const std::vector<double> b = cpu_buffers[i].second.to(DType::f64).to_vector<double>();
    for (size_t j = 0; j < a.size(); ++j) CHECK(a[j] == Approx(b[j]).epsilon(1e-5).margin(1e-6));
  }
}
