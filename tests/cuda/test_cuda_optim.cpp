// The fused optimizer kernels on CUDA against the CPU kernels, several steps of every
// configuration, at odd sizes (a partial block, several blocks). The parameter and its state
// are updated in place, so each sits between sentinel guard bands for the whole run.
//
// optim_update.cu is built with --fmad=false and runs the CPU's functors, and nvcc's division
// and sqrt are IEEE by default, so the results must agree bit for bit, not just closely.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "duet/kernels/backend.h"
#include "duet/kernels/optim_kernels.h"
#include "optim_configs.h"

using namespace duet;

namespace {

const Device kGpu = cuda_device(0);
const std::vector<int64_t> kSizes = {1, 7, 1000, 70001};
constexpr int kSteps = 3;

// One in-place operand on both sides: a dense CPU copy and a guarded CUDA view of the same values.
struct State {
  Tensor cpu;
  test::GuardedOutput cuda;
  State(const test::TensorPair& values, DType dtype)
      : cpu(test::copy_to(values.cpu, duet::cpu())), cuda(values.cpu.sizes(), dtype, kGpu) {
    kernels::copy(values.cuda, cuda.view());
  }
};

std::string label(const char* op, DType dtype, int64_t n, const std::string& options) {
  return std::string(op) + " " + dtype_name(dtype) + "[" + std::to_string(n) + "] " + options;
}

}  // namespace

TEST_CASE("CUDA fused SGD equals the CPU kernel bit for bit, inside guard bands", "[cuda]") {
  uint64_t seed = 900;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (int64_t n : kSizes) {
      for (const kernels::SgdUpdateArgs& config : test::sgd_configs()) {
        const bool momentum = config.momentum != 0;
        State param(test::random_pair({n}, dtype, -2, 2, ++seed), dtype);
        State buffer(test::random_pair({n}, dtype, -1, 1, ++seed), dtype);
        for (int step = 0; step < kSteps; ++step) {
          auto grad = test::random_pair({n}, dtype, -1, 1, ++seed);
          kernels::SgdUpdateArgs args = config;
          args.first_step = step == 0;
          kernels::sgd_update(param.cuda.view(), grad.cuda, momentum ? buffer.cuda.view() : Tensor(), args);
          kernels::cpu_backend().sgd_update(param.cpu, grad.cpu, momentum ? buffer.cpu : Tensor(), args);
        }
        const std::string what = label("sgd", dtype, n, test::describe(config));
        test::require_identical(param.cuda.check_and_fetch(), param.cpu, what + " param");
        // Without momentum the buffer is no operand: the guarded copy must come back untouched.
        test::require_identical(buffer.cuda.check_and_fetch(), buffer.cpu, what + " momentum buffer");
      }
    }
  }
}

TEST_CASE("CUDA fused Adam and AdamW, with and without amsgrad, equal the CPU kernel bit for bit, inside guard bands",
          "[cuda]") {
  uint64_t seed = 950;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (int64_t n : kSizes) {
      for (const kernels::AdamUpdateArgs& config : test::adam_configs()) {
        State param(test::random_pair({n}, dtype, -2, 2, ++seed), dtype);
        State exp_avg(test::random_pair({n}, dtype, -0.1, 0.1, ++seed), dtype);
        State exp_avg_sq(test::random_pair({n}, dtype, 0, 0.01, ++seed), dtype);
        // amsgrad's running maximum, above some of exp_avg_sq and below the rest.
        State max_exp_avg_sq(test::random_pair({n}, dtype, 0, 0.02, ++seed), dtype);
        for (int step = 1; step <= kSteps; ++step) {
          auto grad = test::random_pair({n}, dtype, -1, 1, ++seed);
          const kernels::AdamUpdateArgs args = test::bias_corrected(config, step);
          const Tensor max_gpu = config.amsgrad ? max_exp_avg_sq.cuda.view() : Tensor();
          const Tensor max_cpu = config.amsgrad ? max_exp_avg_sq.cpu : Tensor();
          kernels::adam_update(param.cuda.view(), grad.cuda, exp_avg.cuda.view(), exp_avg_sq.cuda.view(), max_gpu,
                               args);
          kernels::cpu_backend().adam_update(param.cpu, grad.cpu, exp_avg.cpu, exp_avg_sq.cpu, max_cpu, args);
        }
        const std::string what = label("adam", dtype, n, test::describe(config));
        test::require_identical(param.cuda.check_and_fetch(), param.cpu, what + " param");
        test::require_identical(exp_avg.cuda.check_and_fetch(), exp_avg.cpu, what + " exp_avg");
        test::require_identical(exp_avg_sq.cuda.check_and_fetch(), exp_avg_sq.cpu, what + " exp_avg_sq");
        test::require_identical(max_exp_avg_sq.cuda.check_and_fetch(), max_exp_avg_sq.cpu, what + " max_exp_avg_sq");
      }
    }
  }
}

TEST_CASE("a fused update refuses a CUDA parameter with a host gradient", "[cuda]") {
  auto param = test::random_pair({5}, DType::f32, -1, 1, 990);
  auto grad = test::random_pair({5}, DType::f32, -1, 1, 991);
  REQUIRE_THROWS_WITH(kernels::sgd_update(param.cuda, grad.cpu, Tensor(), {.lr = 0.1}),
                      Catch::Matchers::Contains("sgd_update: grad f32[5] on cpu:0 and param f32[5] on cuda:0 are on "
                                                "different devices"));
}
