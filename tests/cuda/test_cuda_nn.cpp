// The CUDA NN kernels against the CPU ones on the same random inputs: softmax, log-softmax and
// cross-entropy, pooling (per-axis windows, ceil_mode, count_include_pad, adaptive average and
// max, NaN), batch norm (cuDNN and duet's kernels) and conv2d (cuDNN and im2col paths, with
// groups, dilation and per-axis geometry), and the convolution fused with an activation and average
// pooling, forward and backward, f32 and f64, odd sizes. Outputs sit between sentinel
// guard bands. (The NN kernels take contiguous operands only, so there are no strided cases.)
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "duet/duet.h"
#include "duet/kernels/backend.h"
#include "duet/kernels/cuda/launch_geometry.h"
#include "duet/kernels/cuda/runtime.h"
#include "duet/kernels/nn_kernels.h"

using namespace duet;

namespace {

const Device kGpu = cuda_device(0);
const std::vector<DType> kFloating = {DType::f32, DType::f64};

const kernels::Backend& cpu_nn() { return kernels::cpu_backend(); }

double tol(DType dtype, double f32_tol) { return dtype == DType::f32 ? f32_tol : 1e-11; }

std::string label(const std::string& op, DType dtype, size_t c = 0) {
  return op + " " + dtype_name(dtype) + " case " + std::to_string(c);
}

Tensor cpu_empty(const Shape& sizes, DType dtype) { return test::empty_tensor(sizes, dtype, cpu()); }

void compare(const test::GuardedOutput& out, const Tensor& expected, double rtol, const std::string& what) {
  test::require_close(out.check_and_fetch(), expected, rtol, rtol, what);
}

// i64 values in [0, classes) on both devices.
test::TensorPair random_targets(int64_t n, int64_t classes, uint64_t seed) {
  return test::random_pair({n}, DType::i64, 0, static_cast<double>(classes - 1), seed, true);
}

}  // namespace

TEST_CASE("CUDA softmax and log-softmax match the CPU, forward and backward", "[cuda]") {
  struct Case {
    Shape sizes;
    int64_t dim;
  };
  const std::vector<Case> cases = {{{7, 1000}, 1},  {{3, 37, 5}, 0}, {{3, 37, 5}, 1},
                                   {{3, 37, 5}, 2}, {{1}, 0},        {{2, 3000}, 1}};
  uint64_t seed = 3000;
  for (DType dtype : kFloating) {
    for (size_t c = 0; c < cases.size(); ++c) {
      const auto& [sizes, dim] = cases[c];
      auto x = test::random_pair(sizes, dtype, -6, 6, ++seed);
      auto grad = test::random_pair(sizes, dtype, -2, 2, ++seed);
      for (bool log : {false, true}) {
        const std::string op = log ? "log_softmax" : "softmax";
        test::GuardedOutput y(sizes, dtype, kGpu);
        Tensor y_cpu = cpu_empty(sizes, dtype);
        if (log) {
          kernels::log_softmax_forward(x.cuda, dim, y.view());
          cpu_nn().log_softmax_forward(x.cpu, dim, y_cpu);
        } else {
          kernels::softmax_forward(x.cuda, dim, y.view());
          cpu_nn().softmax_forward(x.cpu, dim, y_cpu);
        }
        compare(y, y_cpu, tol(dtype, 1e-5), label(op, dtype, c));
        // The backward from the same forward output on both sides.
        Tensor y_gpu = test::copy_to(y_cpu, kGpu);
        test::GuardedOutput gx(sizes, dtype, kGpu);
        Tensor gx_cpu = cpu_empty(sizes, dtype);
        if (log) {
          kernels::log_softmax_backward(grad.cuda, y_gpu, dim, gx.view());
          cpu_nn().log_softmax_backward(grad.cpu, y_cpu, dim, gx_cpu);
        } else {
          kernels::softmax_backward(grad.cuda, y_gpu, dim, gx.view());
          cpu_nn().softmax_backward(grad.cpu, y_cpu, dim, gx_cpu);
        }
        compare(gx, gx_cpu, tol(dtype, 1e-5), label(op + " backward", dtype, c));
      }
    }
  }
}

// Every option of the fused kernel (nn_kernels.h, CrossEntropyTerms): ignored rows, class weights,
// label smoothing and both, on [N, C] rows and on [N, C, d1, d2] (rows `inner` elements apart).
TEST_CASE("CUDA cross-entropy matches the CPU, with every option", "[cuda]") {
  struct Options {
    bool weighted;
    double smoothing;
    int64_t ignore_index;  // set in every third row when >= 0, else the default -100 (never a target)
  };
  const std::vector<Options> options = {
      {false, 0, -100}, {false, 0, 2}, {true, 0, -100}, {false, 0.2, 1}, {true, 0.3, 0}};
  uint64_t seed = 4000;
  for (DType dtype : kFloating) {
    for (const Shape& sizes : std::vector<Shape>{{13, 11}, {1, 1}, {300, 10}, {2, 1500}, {3, 5, 4, 2}}) {
      for (size_t c = 0; c < options.size(); ++c) {
        const Options& o = options[c];
        const int64_t classes = sizes[1];
        Shape rows = sizes;
        rows.erase(rows.begin() + 1);
        const int64_t n = numel(rows);
        auto logits = test::random_pair(sizes, dtype, -5, 5, ++seed);
        auto target = test::random_pair(rows, DType::i64, 0, static_cast<double>(classes - 1), ++seed, true);
        Tensor host_target = target.cpu;
        if (o.ignore_index >= 0) {
          for (int64_t i = 0; i < n; i += 3) host_target.data<int64_t>()[i] = o.ignore_index;
        } else if (n > 1) {
          host_target.data<int64_t>()[1] = -100;  // the default ignore_index ignores it
        }
        const Tensor target_gpu = test::copy_to(host_target, kGpu);
        const test::TensorPair weight = test::random_pair({classes}, dtype, 0.1, 3, ++seed);
        const Tensor weight_cpu = o.weighted ? weight.cpu : Tensor(), weight_gpu = o.weighted ? weight.cuda : Tensor();
        const kernels::CrossEntropyTerms terms{.ignore_index = o.ignore_index, .label_smoothing = o.smoothing};
        const std::string what = label("cross_entropy", dtype, c) + " " + shape_str(sizes);

        test::GuardedOutput losses(rows, dtype, kGpu), log_probs(sizes, dtype, kGpu), total({}, dtype, kGpu);
        kernels::cross_entropy_forward(logits.cuda, target_gpu, weight_gpu, terms, losses.view(), log_probs.view(),
                                       total.view());
        Tensor losses_cpu = cpu_empty(rows, dtype), log_probs_cpu = cpu_empty(sizes, dtype),
               total_cpu = cpu_empty({}, dtype);
        cpu_nn().cross_entropy_forward(logits.cpu, host_target, weight_cpu, terms, losses_cpu, log_probs_cpu,
                                       total_cpu);
        compare(losses, losses_cpu, tol(dtype, 1e-5), what + " losses");
        compare(log_probs, log_probs_cpu, tol(dtype, 1e-5), what + " log_probs");
        compare(total, total_cpu, tol(dtype, 1e-6), what + " total_weight");

        auto grad = test::random_pair(rows, dtype, -2, 2, ++seed);
        Tensor log_probs_gpu = test::copy_to(log_probs_cpu, kGpu);
        test::GuardedOutput grad_logits(sizes, dtype, kGpu);
        kernels::cross_entropy_backward(grad.cuda, log_probs_gpu, target_gpu, weight_gpu, terms, grad_logits.view());
        Tensor grad_logits_cpu = cpu_empty(sizes, dtype);
        cpu_nn().cross_entropy_backward(grad.cpu, log_probs_cpu, host_target, weight_cpu, terms, grad_logits_cpu);
        compare(grad_logits, grad_logits_cpu, tol(dtype, 1e-5), what + " backward");
      }
    }
  }
}

// The label check never waits (kernels/cuda/bad_label.h): the kernels guard the bad row and the
// CPU's error comes when the host next waits for the device.
TEST_CASE("CUDA cross-entropy reports a bad target with the CPU's error at the next wait", "[cuda]") {
  auto logits = test::random_pair({4, 3}, DType::f32, -1, 1, 4100);
  Tensor host_bad = random_targets(4, 3, 1).cpu;
  host_bad.data<int64_t>()[2] = 3;
  host_bad.data<int64_t>()[3] = -1;
  const Tensor bad = test::copy_to(host_bad, kGpu);
  Tensor losses = test::empty_tensor({4}, DType::f32, kGpu), log_probs = test::empty_tensor({4, 3}, DType::f32, kGpu);
  Tensor total = test::empty_tensor({}, DType::f32, kGpu);
  Tensor cpu_losses = cpu_empty({4}, DType::f32), cpu_log_probs = cpu_empty({4, 3}, DType::f32);
  Tensor cpu_total = cpu_empty({}, DType::f32);
  const kernels::CrossEntropyTerms terms;
  CHECK_THROWS_WITH(
      cpu_nn().cross_entropy_forward(logits.cpu, host_bad, Tensor(), terms, cpu_losses, cpu_log_probs, cpu_total),
      "cross_entropy_forward: target[2] = 3 is out of range for 3 classes (expected 0 <= target < 3, or "
      "ignore_index -100)");
  // queued, not waited for
  CHECK_NOTHROW(kernels::cross_entropy_forward(logits.cuda, bad, Tensor(), terms, losses, log_probs, total));
  // The first bad target, with the CPU's very message, once; then the device is clean again.
  CHECK_THROWS_WITH(cuda::synchronize(kGpu),
                    "cross_entropy_forward: target[2] = 3 is out of range for 3 classes (expected 0 <= target < 3, or "
                    "ignore_index -100)");
  CHECK_NOTHROW(cuda::synchronize(kGpu));
  // An ignored target is no bad label, whether ignore_index is a class or not.
  const Tensor ignored = test::copy_to(from_vector<int64_t>({0, -100, 2, 1}), kGpu);
  kernels::cross_entropy_forward(logits.cuda, ignored, Tensor(), terms, losses, log_probs, total);
  CHECK_NOTHROW(cuda::synchronize(kGpu));
  kernels::cross_entropy_forward(logits.cuda, test::copy_to(from_vector<int64_t>({0, 1, 2, 1}), kGpu), Tensor(),
                                 {.ignore_index = 1}, losses, log_probs, total);
  CHECK_NOTHROW(cuda::synchronize(kGpu));
  CHECK(test::copy_to(total, cpu()).item<float>() == 2.0f);
  // The first bad call's target again, for the rows below.
  kernels::cross_entropy_forward(logits.cuda, bad, Tensor(), terms, losses, log_probs, total);
  CHECK_THROWS(cuda::synchronize(kGpu));

  // The guarded rows: NaN loss, zero gradient; the good rows as on the CPU.
  const std::vector<float> loss_values = test::copy_to(losses, cpu()).to_vector<float>();
  CHECK(std::isnan(loss_values[2]));
  CHECK(std::isnan(loss_values[3]));
  CHECK_FALSE(std::isnan(loss_values[0]));
  Tensor grad = test::copy_to(test::random_pair({4}, DType::f32, 1, 1, 4101).cpu, kGpu);
  Tensor grad_logits = test::empty_tensor({4, 3}, DType::f32, kGpu);
  kernels::cross_entropy_backward(grad, log_probs, bad, Tensor(), terms, grad_logits);
  const std::vector<float> g = test::copy_to(grad_logits, cpu()).to_vector<float>();
  for (int j = 6; j < 12; ++j) CHECK(g[static_cast<size_t>(j)] == 0.0f);

  // Through nn::functional, as a training loop meets it: reading the loss throws, naming the label.
  const Tensor scores = randn({5, 10}).to(kGpu);
  const Tensor labels = from_vector<int64_t>({1, 2, 3, 10, 4}).to(kGpu);
  CHECK_THROWS_WITH(nn::functional::cross_entropy(scores, labels).item<float>(),
                    Catch::Contains("target[3] = 10 is out of range for 10 classes"));
  CHECK(std::isfinite(
      nn::functional::cross_entropy(scores, from_vector<int64_t>({1, 2, 3, 9, 4}).to(kGpu)).item<float>()));
}

namespace {

// Max pooling (sliding when `window` is set, else adaptive to out_sizes) on both devices: values
// and indices bit for bit, and the backward from the CPU's indices, bit for bit too (the CUDA
// gather adds in the CPU scatter's order).
void check_max_pool(const test::TensorPair& x, const std::optional<kernels::Pool2dGeometry>& window,
                    const Shape& out_sizes, const test::TensorPair& grad, const std::string& what) {
  const DType dtype = x.cpu.dtype();
  test::GuardedOutput out(out_sizes, dtype, kGpu), indices(out_sizes, DType::i64, kGpu);
  Tensor out_cpu = cpu_empty(out_sizes, dtype), indices_cpu = cpu_empty(out_sizes, DType::i64);
  if (window) {
    kernels::max_pool2d_forward(x.cuda, *window, out.view(), indices.view());
    cpu_nn().max_pool2d_forward(x.cpu, *window, out_cpu, indices_cpu);
  } else {
    kernels::adaptive_max_pool2d_forward(x.cuda, out.view(), indices.view());
    cpu_nn().adaptive_max_pool2d_forward(x.cpu, out_cpu, indices_cpu);
  }
  test::require_identical(out.check_and_fetch(), out_cpu, what);
  test::require_identical(indices.check_and_fetch(), indices_cpu, what + " indices");

  const Shape& in_sizes = x.cpu.sizes();
  test::GuardedOutput gx(in_sizes, dtype, kGpu);
  kernels::max_pool2d_backward(grad.cuda, test::copy_to(indices_cpu, kGpu), window, gx.view());
  Tensor gx_cpu = cpu_empty(in_sizes, dtype);
  cpu_nn().max_pool2d_backward(grad.cpu, indices_cpu, window, gx_cpu);
  test::require_identical(gx.check_and_fetch(), gx_cpu, what + " backward");
}

// Average pooling through `activation` (none: plain) on both devices, forward and backward.
void check_avg_pool(const test::TensorPair& x, const kernels::Pool2dGeometry& w, const Shape& out_sizes,
                    const test::TensorPair& grad, std::optional<kernels::UnaryOp> activation, const std::string& what) {
  const DType dtype = x.cpu.dtype();
  const Shape& in_sizes = x.cpu.sizes();
  test::GuardedOutput avg(out_sizes, dtype, kGpu);
  kernels::avg_pool2d_forward(x.cuda, w, activation, avg.view());
  Tensor avg_cpu = cpu_empty(out_sizes, dtype);
  cpu_nn().avg_pool2d_forward(x.cpu, w, activation, avg_cpu);
  compare(avg, avg_cpu, tol(dtype, 1e-6), what);

  test::GuardedOutput agx(in_sizes, dtype, kGpu);
  kernels::avg_pool2d_backward(grad.cuda, x.cuda, w, activation, agx.view());
  Tensor agx_cpu = cpu_empty(in_sizes, dtype);
  cpu_nn().avg_pool2d_backward(grad.cpu, x.cpu, w, activation, agx_cpu);
  compare(agx, agx_cpu, tol(dtype, 1e-6), what + " backward");
}

// {N, C, Ho, Wo} of pooling an input of in_sizes.
Shape pooled_sizes(const Shape& in_sizes, const kernels::Pool2dGeometry& w) {
  const PerAxis hw = kernels::pool2d_output_size(w, {in_sizes[2], in_sizes[3]});
  return {in_sizes[0], in_sizes[1], hw.h, hw.w};
}

}  // namespace

TEST_CASE("CUDA pooling matches the CPU, forward and backward", "[cuda]") {
  using Window = kernels::Pool2dGeometry;
  const std::vector<std::pair<Shape, Window>> sliding = {
      {{2, 3, 11, 9}, {3, 2, 1}},
      {{2, 3, 10, 10}, {2, 2, 0}},
      {{1, 2, 7, 13}, {3, 1, 1}},
      {{3, 1, 5, 5}, {5, 1, 2}},
      {{2, 3, 11, 9}, {.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 0}}},
      {{2, 3, 7, 9}, {.kernel = {2, 3}, .stride = {1, 2}, .padding = 1, .count_include_pad = false}},
      {{1, 2, 8, 7}, {.kernel = 3, .stride = 2, .padding = 1, .ceil_mode = true}},  // past the padded edge
      {{1, 2, 8, 7}, {.kernel = 3, .stride = 2, .padding = 1, .ceil_mode = true, .count_include_pad = false}},
      {{2, 2, 5, 7}, {.kernel = 2, .stride = 2, .ceil_mode = true}},  // 2x2 with a partial window at odd edges
      {{1, 1, 5, 5}, {.kernel = 3, .stride = 3, .padding = 1, .ceil_mode = true, .count_include_pad = false}}};
  uint64_t seed = 5000;
  for (DType dtype : kFloating) {
    for (size_t c = 0; c < sliding.size(); ++c) {
      const auto& [in_sizes, w] = sliding[c];
      const Shape out_sizes = pooled_sizes(in_sizes, w);
      // Small integers make ties, so the first-maximum rule and the indices are tested.
      auto x = test::random_pair(in_sizes, dtype, -3, 3, ++seed, true);
      auto grad = test::random_pair(out_sizes, dtype, -2, 2, ++seed);
      check_max_pool(x, w, out_sizes, grad, label("max_pool2d", dtype, c));

      // Plain, and with each activation it can fuse before it.
      for (std::optional<kernels::UnaryOp> activation :
           {std::optional<kernels::UnaryOp>(), std::optional(kernels::UnaryOp::relu),
            std::optional(kernels::UnaryOp::sigmoid), std::optional(kernels::UnaryOp::tanh)}) {
        const std::string name = activation ? std::string(kernels::name(*activation)) + " avg_pool2d" : "avg_pool2d";
        check_avg_pool(x, w, out_sizes, grad, activation, label(name, dtype, c));
      }
    }
    // Adaptive: shrinking, growing, to 1x1, to the same size, non-square.
    const std::vector<std::pair<Shape, Shape>> adaptive = {{{2, 3, 11, 9}, {2, 3, 3, 4}},
                                                           {{1, 2, 5, 4}, {1, 2, 13, 10}},
                                                           {{2, 4, 7, 7}, {2, 4, 1, 1}},
                                                           {{1, 1, 6, 5}, {1, 1, 6, 5}},
                                                           {{2, 3, 7, 5}, {2, 3, 8, 2}}};
    for (size_t c = 0; c < adaptive.size(); ++c) {
      const auto& [in_sizes, out_sizes] = adaptive[c];
      auto x = test::random_pair(in_sizes, dtype, -3, 3, ++seed);
      auto grad = test::random_pair(out_sizes, dtype, -2, 2, ++seed);
      test::GuardedOutput out(out_sizes, dtype, kGpu);
      kernels::adaptive_avg_pool2d_forward(x.cuda, out.view());
      Tensor out_cpu = cpu_empty(out_sizes, dtype);
      cpu_nn().adaptive_avg_pool2d_forward(x.cpu, out_cpu);
      compare(out, out_cpu, tol(dtype, 1e-6), label("adaptive_avg_pool2d", dtype, c));
      test::GuardedOutput gx(in_sizes, dtype, kGpu);
      kernels::adaptive_avg_pool2d_backward(grad.cuda, gx.view());
      Tensor gx_cpu = cpu_empty(in_sizes, dtype);
      cpu_nn().adaptive_avg_pool2d_backward(grad.cpu, gx_cpu);
      compare(gx, gx_cpu, tol(dtype, 1e-6), label("adaptive_avg_pool2d backward", dtype, c));

      auto ties = test::random_pair(in_sizes, dtype, -3, 3, ++seed, true);
      check_max_pool(ties, std::nullopt, out_sizes, grad, label("adaptive_max_pool2d", dtype, c));
    }
  }
}

TEST_CASE("CUDA dilated max pooling and divisor_override average pooling match the CPU", "[cuda]") {
  using Window = kernels::Pool2dGeometry;
  const std::vector<std::pair<Shape, Window>> dilated = {
      {{2, 3, 11, 9}, {.kernel = 3, .stride = 1, .padding = 1, .dilation = 2}},
      {{1, 2, 10, 13}, {.kernel = {2, 3}, .stride = {3, 1}, .padding = 1, .ceil_mode = true, .dilation = {3, 2}}},
      {{2, 2, 8, 9}, {.kernel = 2, .stride = 2, .dilation = {1, 3}}}};
  const std::vector<std::pair<Shape, Window>> divided = {
      {{2, 3, 10, 10}, {.kernel = 2, .stride = 2, .divisor_override = 3}},
      {{1, 2, 8, 7},
       {.kernel = 3, .stride = 2, .padding = 1, .ceil_mode = true, .count_include_pad = false, .divisor_override = 5}},
      {{2, 1, 7, 9}, {.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 0}, .divisor_override = -2}}};
  uint64_t seed = 5500;
  for (DType dtype : kFloating) {
    for (size_t c = 0; c < dilated.size(); ++c) {
      const auto& [in_sizes, w] = dilated[c];
      const Shape out_sizes = pooled_sizes(in_sizes, w);
      auto x = test::random_pair(in_sizes, dtype, -3, 3, ++seed, true);  // ties
      check_max_pool(x, w, out_sizes, test::random_pair(out_sizes, dtype, -2, 2, ++seed),
                     label("dilated max_pool2d", dtype, c));
    }
    for (size_t c = 0; c < divided.size(); ++c) {
      const auto& [in_sizes, w] = divided[c];
      const Shape out_sizes = pooled_sizes(in_sizes, w);
      auto x = test::random_pair(in_sizes, dtype, -3, 3, ++seed);
      auto grad = test::random_pair(out_sizes, dtype, -2, 2, ++seed);
      check_avg_pool(x, w, out_sizes, grad, std::nullopt, label("avg_pool2d divisor_override", dtype, c));
      check_avg_pool(x, w, out_sizes, grad, kernels::UnaryOp::relu,
                     label("relu avg_pool2d divisor_override", dtype, c));
    }
  }
}

// A window holding NaN yields NaN at its last NaN, as PyTorch, on both devices.
TEST_CASE("CUDA max pooling picks the CPU's NaN", "[cuda]") {
  for (DType dtype : kFloating) {
    Tensor host = cpu_empty({1, 2, 5, 6}, dtype);
    for (int64_t i = 0; i < host.numel(); ++i) {
      const double v = (i % 7 == 3 || i % 11 == 5) ? std::nan("") : static_cast<double>(i % 5);
      if (dtype == DType::f32) host.data<float>()[i] = static_cast<float>(v);
      else host.data<double>()[i] = v;
    }
    const test::TensorPair x{host, test::copy_to(host, kGpu)};
    const kernels::Pool2dGeometry window{.kernel = {3, 2}, .stride = {2, 1}, .padding = 1, .ceil_mode = true};
    const PerAxis hw = kernels::pool2d_output_size(window, {5, 6});
    const Shape sliding_out = {1, 2, hw.h, hw.w}, adaptive_out = {1, 2, 2, 3};
    check_max_pool(x, window, sliding_out, test::random_pair(sliding_out, dtype, -1, 1, 5900),
                   label("max_pool2d with NaN", dtype));
    check_max_pool(x, std::nullopt, adaptive_out, test::random_pair(adaptive_out, dtype, -1, 1, 5901),
                   label("adaptive_max_pool2d with NaN", dtype));
  }
}

namespace {

// Picks the batch norm path for one scope: duet's own kernels (DUET_BATCH_NORM_KERNELS=duet) or
// cuDNN (the variable unset), and restores the variable's previous state on exit, also when a
// REQUIRE throws.
class ScopedBatchNormPath {
 public:
  explicit ScopedBatchNormPath(bool own_kernels) {
    if (const char* value = std::getenv(kVariable)) previous_ = value;
    if (own_kernels) setenv(kVariable, "duet", 1);
    else unsetenv(kVariable);
  }
  ~ScopedBatchNormPath() {
    if (previous_) setenv(kVariable, previous_->c_str(), 1);
    else unsetenv(kVariable);
  }
  ScopedBatchNormPath(const ScopedBatchNormPath&) = delete;
  ScopedBatchNormPath& operator=(const ScopedBatchNormPath&) = delete;

 private:
  static constexpr const char* kVariable = "DUET_BATCH_NORM_KERNELS";
  std::optional<std::string> previous_;
};

struct BatchNormVariant {
  bool training, affine, running_stats, grad_x;

  std::string name() const {
    return std::string(training ? " training" : " inference") + (affine ? " affine" : "") +
           (running_stats ? "" : " without running stats") + (grad_x ? "" : " without grad_x");
  }
};

// Tolerances, both paths: f32 within 1e-5 (relative and absolute) forward and 1e-4 backward, f64
// within 1e-11. The CPU sums in double; duet's kernels too, in another order, cuDNN perhaps in
// f32, but over at most 3,280 values of order 1 per channel its rounding stays near 1e-6 (the
// test of 2^20 values per channel below runs duet's kernels only). The backward sums products
// of such values and keeps the looser bound it always had. In inference no sum enters the
// statistics, and the results are bit for bit (below).
void check_batch_norm(DType dtype, const Shape& sizes, const BatchNormVariant& v, bool own_kernels, uint64_t& seed) {
  const std::string path = own_kernels ? " (duet kernels)" : " (cuDNN)";
  const int64_t channels = sizes[1];
  const std::string what = label("batch_norm " + shape_str(sizes) + v.name() + path, dtype);
  auto x = test::random_pair(sizes, dtype, -3, 3, ++seed);
  auto weight = test::random_pair({channels}, dtype, 0.5, 2, ++seed);
  auto bias = test::random_pair({channels}, dtype, -1, 1, ++seed);
  auto mean = test::random_pair({channels}, dtype, -1, 1, ++seed);
  auto var = test::random_pair({channels}, dtype, 0.5, 2, ++seed);
  const auto gpu_if = [](bool wanted, const test::TensorPair& t) { return wanted ? t.cuda : Tensor(); };
  const auto cpu_if = [](bool wanted, const test::TensorPair& t) { return wanted ? t.cpu : Tensor(); };

  test::GuardedOutput out(sizes, dtype, kGpu), save_mean({channels}, dtype, kGpu), save_invstd({channels}, dtype, kGpu);
  kernels::batch_norm_forward(x.cuda, gpu_if(v.affine, weight), gpu_if(v.affine, bias), gpu_if(v.running_stats, mean),
                              gpu_if(v.running_stats, var), v.training, 0.1, 1e-5, out.view(), save_mean.view(),
                              save_invstd.view());
  Tensor out_cpu = cpu_empty(sizes, dtype), sm_cpu = cpu_empty({channels}, dtype),
         si_cpu = cpu_empty({channels}, dtype);
  cpu_nn().batch_norm_forward(x.cpu, cpu_if(v.affine, weight), cpu_if(v.affine, bias), cpu_if(v.running_stats, mean),
                              cpu_if(v.running_stats, var), v.training, 0.1, 1e-5, out_cpu, sm_cpu, si_cpu);
  if (!v.training) {
    // The running statistics are the same on both sides, and so is every step after them
    // (batch_norm.cu is built without fma contraction): the CPU's bits. cuDNN's output is its own.
    test::require_identical(save_mean.check_and_fetch(), sm_cpu, what + " save_mean");
    test::require_identical(save_invstd.check_and_fetch(), si_cpu, what + " save_invstd");
    if (own_kernels) test::require_identical(out.check_and_fetch(), out_cpu, what + " out");
    else compare(out, out_cpu, tol(dtype, 1e-5), what + " out");
  } else {
    compare(out, out_cpu, tol(dtype, 1e-5), what + " out");
    compare(save_mean, sm_cpu, tol(dtype, 1e-5), what + " save_mean");
    compare(save_invstd, si_cpu, tol(dtype, 1e-5), what + " save_invstd");
  }
  if (v.running_stats) {
    test::require_close(test::copy_to(mean.cuda, cpu()), mean.cpu, tol(dtype, 1e-5), tol(dtype, 1e-5),
                        what + " running_mean");
    test::require_close(test::copy_to(var.cuda, cpu()), var.cpu, tol(dtype, 1e-5), tol(dtype, 1e-5),
                        what + " running_var");
  }

  // The backward from the CPU's statistics on both sides.
  auto grad = test::random_pair(sizes, dtype, -2, 2, ++seed);
  const Tensor sm_gpu = test::copy_to(sm_cpu, kGpu), si_gpu = test::copy_to(si_cpu, kGpu);
  test::GuardedOutput gx(sizes, dtype, kGpu), gw({channels}, dtype, kGpu), gb({channels}, dtype, kGpu);
  kernels::batch_norm_backward(grad.cuda, x.cuda, gpu_if(v.affine, weight), sm_gpu, si_gpu, v.training,
                               v.grad_x ? gx.view() : Tensor(), v.affine ? gw.view() : Tensor(),
                               v.affine ? gb.view() : Tensor());
  Tensor gx_cpu = cpu_empty(sizes, dtype), gw_cpu = cpu_empty({channels}, dtype), gb_cpu = cpu_empty({channels}, dtype);
  cpu_nn().batch_norm_backward(grad.cpu, x.cpu, cpu_if(v.affine, weight), sm_cpu, si_cpu, v.training,
                               v.grad_x ? gx_cpu : Tensor(), v.affine ? gw_cpu : Tensor(),
                               v.affine ? gb_cpu : Tensor());
  // In inference grad_x is g * scale, from the saved statistics alone, on duet's kernels on both
  // paths (cuDNN's backward computes training's): the CPU's bits.
  if (v.grad_x && !v.training) test::require_identical(gx.check_and_fetch(), gx_cpu, what + " grad_x");
  else if (v.grad_x) compare(gx, gx_cpu, tol(dtype, 1e-4), what + " grad_x");
  if (v.affine) {
    compare(gw, gw_cpu, tol(dtype, 1e-4), what + " grad_weight");
    compare(gb, gb_cpu, tol(dtype, 1e-4), what + " grad_bias");
  }
}

}  // namespace

// On both paths: cuDNN, which hands inference backward and what it declines to duet's kernels,
// and duet's kernels alone.
TEST_CASE("CUDA batch norm matches the CPU, through cuDNN and through duet's kernels", "[cuda]") {
  const bool own_kernels = GENERATE(false, true);
  const ScopedBatchNormPath scoped_path(own_kernels);
  const std::vector<BatchNormVariant> variants = {
      {true, true, true, true},   {true, false, true, true}, {false, true, true, true},
      {false, false, true, true}, {true, true, false, true}, {true, true, true, false},
  };
  uint64_t seed = 6000;
  for (DType dtype : kFloating)
    for (const Shape& sizes : std::vector<Shape>{{4, 5, 7, 3}, {9, 6}, {2, 3, 40, 41}})
      for (const BatchNormVariant& v : variants) check_batch_norm(dtype, sizes, v, own_kernels, seed);
}

// Two channels of 2^20 values each: duet's kernels split every channel into slices, one block
// each, and combine the slices' partial sums in a fixed order. The CPU sums the same double terms
// in another order; over 2^20 values of order 1 the two sums part in their last few bits (near
// 1e-13 relative), far inside check_batch_norm's tolerances. The slices' combination has no
// atomics, so a second run gives the first's bits.
TEST_CASE("CUDA batch norm over few channels of many values matches the CPU and repeats its bits", "[cuda]") {
  const ScopedBatchNormPath scoped_path(/*own_kernels=*/true);
  const Shape sizes = {16, 2, 256, 256};
  uint64_t seed = 6500;
  for (DType dtype : kFloating) {
    // And three channels of 12,261 values: two slices each, of unequal length.
    for (const Shape& shape : std::vector<Shape>{sizes, {3, 3, 61, 67}})
      for (const BatchNormVariant& v : std::vector<BatchNormVariant>{{true, true, true, true},
                                                                     {false, true, true, true},
                                                                     {true, false, false, true},
                                                                     {true, true, true, false}})
        check_batch_norm(dtype, shape, v, /*own_kernels=*/true, seed);

    const auto x = test::random_pair(sizes, dtype, -3, 3, ++seed),
               grad = test::random_pair(sizes, dtype, -2, 2, ++seed);
    std::vector<Tensor> runs;
    for (int run = 0; run < 2; ++run) {
      Tensor out = test::empty_tensor(sizes, dtype, kGpu), mean = test::empty_tensor({2}, dtype, kGpu),
             invstd = test::empty_tensor({2}, dtype, kGpu), gx = test::empty_tensor(sizes, dtype, kGpu),
             gw = test::empty_tensor({2}, dtype, kGpu), gb = test::empty_tensor({2}, dtype, kGpu);
      const Tensor weight = test::copy_to(test::random_pair({2}, dtype, 0.5, 2, 6600).cpu, kGpu);
      kernels::batch_norm_forward(x.cuda, weight, Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5, out, mean, invstd);
      kernels::batch_norm_backward(grad.cuda, x.cuda, weight, mean, invstd, true, gx, gw, gb);
      for (const Tensor& t : {out, mean, invstd, gx, gw, gb}) runs.push_back(test::copy_to(t, cpu()));
    }
    for (size_t i = 0; i < runs.size() / 2; ++i)
      test::require_identical(runs[runs.size() / 2 + i], runs[i],
                              label("batch_norm run twice, output " + std::to_string(i), dtype));
  }
}

TEST_CASE("CUDA conv2d matches the CPU through cuDNN and through im2col", "[cuda]") {
  struct Case {
    Shape x, weight;
    kernels::Conv2dGeometry geometry;
    bool bias;
  };
  const std::vector<Case> cases = {
      {{2, 3, 11, 9}, {5, 3, 3, 2}, {.stride = 2, .padding = 1}, true},
      {{3, 4, 8, 8}, {6, 4, 1, 1}, {}, true},  // pointwise
      {{1, 1, 28, 28}, {20, 1, 3, 3}, {}, false},
      {{2, 20, 13, 13}, {50, 20, 5, 5}, {.padding = 2}, true},
      {{5, 2, 7, 6}, {3, 2, 3, 3}, {.stride = 3, .padding = 1}, false},
      {{2, 4, 11, 9}, {6, 2, 3, 2}, {.stride = {2, 1}, .padding = {1, 0}, .dilation = {1, 2}, .groups = 2}, true},
      {{2, 8, 10, 10}, {8, 1, 3, 3}, {.padding = 2, .dilation = 2, .groups = 8}, true},  // depthwise, dilated
      {{2, 6, 9, 9}, {12, 1, 3, 3}, {.stride = 2, .padding = 1, .groups = 6}, false},    // depthwise, 2 per channel
      {{3, 4, 8, 8}, {6, 2, 1, 1}, {.groups = 2}, true},                                 // pointwise in groups
      {{1, 3, 13, 11}, {6, 3, 3, 3}, {.stride = {1, 2}, .padding = {2, 1}, .dilation = {2, 3}}, false}};
  uint64_t seed = 7000;
  for (bool im2col : {false, true}) {
    if (im2col) setenv("DUET_CONV_IM2COL", "1", 1);
    for (DType dtype : kFloating) {
      for (size_t c = 0; c < cases.size(); ++c) {
        const Case& cs = cases[c];
        const std::string path = im2col ? " (im2col)" : " (cuDNN)";
        const PerAxis out_hw =
            kernels::conv2d_output_size(cs.geometry, {cs.x[2], cs.x[3]}, {cs.weight[2], cs.weight[3]});
        const Shape out_sizes = {cs.x[0], cs.weight[0], out_hw.h, out_hw.w};
        auto x = test::random_pair(cs.x, dtype, -1, 1, ++seed);
        auto w = test::random_pair(cs.weight, dtype, -1, 1, ++seed);
        auto b = test::random_pair({cs.weight[0]}, dtype, -1, 1, ++seed);
        auto grad = test::random_pair(out_sizes, dtype, -1, 1, ++seed);

        test::GuardedOutput out(out_sizes, dtype, kGpu);
        kernels::conv2d_forward(x.cuda, w.cuda, cs.bias ? b.cuda : Tensor(), cs.geometry, out.view());
        Tensor out_cpu = cpu_empty(out_sizes, dtype);
        cpu_nn().conv2d_forward(x.cpu, w.cpu, cs.bias ? b.cpu : Tensor(), cs.geometry, out_cpu);
        compare(out, out_cpu, tol(dtype, 1e-4), label("conv2d_forward" + path, dtype, c));

        test::GuardedOutput gx(cs.x, dtype, kGpu);
        kernels::conv2d_backward_input(grad.cuda, w.cuda, cs.geometry, gx.view());
        Tensor gx_cpu = cpu_empty(cs.x, dtype);
        cpu_nn().conv2d_backward_input(grad.cpu, w.cpu, cs.geometry, gx_cpu);
        compare(gx, gx_cpu, tol(dtype, 1e-4), label("conv2d_backward_input" + path, dtype, c));

        test::GuardedOutput gw(cs.weight, dtype, kGpu), gb({cs.weight[0]}, dtype, kGpu);
        kernels::conv2d_backward_weight(grad.cuda, x.cuda, cs.geometry, gw.view(), gb.view());
        Tensor gw_cpu = cpu_empty(cs.weight, dtype), gb_cpu = cpu_empty({cs.weight[0]}, dtype);
        cpu_nn().conv2d_backward_weight(grad.cpu, x.cpu, cs.geometry, gw_cpu, gb_cpu);
        compare(gw, gw_cpu, tol(dtype, 1e-4), label("conv2d_backward_weight" + path, dtype, c));
        compare(gb, gb_cpu, tol(dtype, 1e-4), label("conv2d_backward_weight's bias" + path, dtype, c));
      }
    }
    if (im2col) unsetenv("DUET_CONV_IM2COL");
  }
}

TEST_CASE("CUDA's fused convolution and average pooling matches the CPU's fused kernels", "[cuda]") {
  struct Case {
    Shape x, weight;
    kernels::Conv2dGeometry conv;
    kernels::Pool2dGeometry pool;
  };
  const std::vector<Case> cases = {
      {{3, 1, 28, 28}, {20, 1, 3, 3}, {}, {.kernel = 2, .stride = 2}},  // LeNet-ReLU's first layer
      {{2, 2, 9, 8}, {17, 2, 3, 3}, {.padding = 1}, {.kernel = 2, .stride = 2}},
      {{1, 2, 8, 9}, {3, 2, 3, 3}, {}, {.kernel = 2, .stride = 2}},  // an odd width
      {{2, 1, 4, 9}, {2, 1, 3, 3}, {}, {.kernel = 2, .stride = 2}},  // one row of windows
      {{2, 3, 8, 7},
       {4, 3, 3, 3},
       {.padding = 1},
       {.kernel = 3, .stride = 2, .padding = 1, .ceil_mode = true, .count_include_pad = false}},
      {{2, 3, 9, 9}, {4, 3, 3, 3}, {.stride = 2}, {.kernel = 2, .stride = 2}}};  // the CPU's separate kernels
  uint64_t seed = 9000;
  for (DType dtype : kFloating) {
    for (size_t c = 0; c < cases.size(); ++c) {
      const Case& cs = cases[c];
      const PerAxis conv_hw = kernels::conv2d_output_size(cs.conv, {cs.x[2], cs.x[3]}, {cs.weight[2], cs.weight[3]});
      const PerAxis out_hw = kernels::pool2d_output_size(cs.pool, conv_hw);
      const Shape out_sizes = {cs.x[0], cs.weight[0], out_hw.h, out_hw.w}, bias_sizes = {cs.weight[0]};
      auto x = test::random_pair(cs.x, dtype, -1, 1, ++seed);
      auto w = test::random_pair(cs.weight, dtype, -1, 1, ++seed);
      auto b = test::random_pair(bias_sizes, dtype, -1, 1, ++seed);
      auto grad = test::random_pair(out_sizes, dtype, -1, 1, ++seed);
      for (std::optional<kernels::UnaryOp> activation :
           {std::optional<kernels::UnaryOp>(), std::optional(kernels::UnaryOp::relu),
            std::optional(kernels::UnaryOp::sigmoid), std::optional(kernels::UnaryOp::tanh)}) {
        const std::string name =
            std::string("conv2d ") + (activation ? kernels::name(*activation) : "") + " avg_pool2d";
        test::GuardedOutput out(out_sizes, dtype, kGpu);
        kernels::conv2d_avg_pool2d_forward(x.cuda, w.cuda, b.cuda, cs.conv, activation, cs.pool, out.view());
        Tensor out_cpu = cpu_empty(out_sizes, dtype);
        cpu_nn().conv2d_avg_pool2d_forward(x.cpu, w.cpu, b.cpu, cs.conv, activation, cs.pool, out_cpu);
        compare(out, out_cpu, tol(dtype, 1e-4), label(name, dtype, c));

        test::GuardedOutput gx(cs.x, dtype, kGpu), gw(cs.weight, dtype, kGpu), gb(bias_sizes, dtype, kGpu);
        kernels::conv2d_avg_pool2d_backward(grad.cuda, x.cuda, w.cuda, b.cuda, cs.conv, activation, cs.pool, gx.view(),
                                            gw.view(), gb.view());
        Tensor gx_cpu = cpu_empty(cs.x, dtype), gw_cpu = cpu_empty(cs.weight, dtype);
        Tensor gb_cpu = cpu_empty(bias_sizes, dtype);
        cpu_nn().conv2d_avg_pool2d_backward(grad.cpu, x.cpu, w.cpu, b.cpu, cs.conv, activation, cs.pool, gx_cpu, gw_cpu,
                                            gb_cpu);
        compare(gx, gx_cpu, tol(dtype, 1e-4), label(name + " grad_x", dtype, c));
        compare(gw, gw_cpu, tol(dtype, 1e-4), label(name + " grad_weight", dtype, c));
        compare(gb, gb_cpu, tol(dtype, 1e-4), label(name + " grad_bias", dtype, c));
      }
    }
  }
}

// The target check runs on many blocks for a large batch, then combines their partials: the first
// bad target is the lowest index over every block (here not in the first block), and the weights'
// sum counts every good row.
TEST_CASE("CUDA cross-entropy's target check over many blocks names the first bad target", "[cuda]") {
  const int64_t rows = 300'000;
  std::vector<int64_t> labels(static_cast<size_t>(rows));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>(i % 3);
  labels[299'999] = 7;
  labels[123'456] = 5;
  labels[200'000] = -100;  // ignored: neither bad nor counted
  const test::TensorPair logits = test::random_pair({rows, 3}, DType::f32, -2, 2, 4201);
  const Tensor target = test::copy_to(from_vector<int64_t>(labels), kGpu);
  Tensor losses = test::empty_tensor({rows}, DType::f32, kGpu),
         log_probs = test::empty_tensor({rows, 3}, DType::f32, kGpu), total = test::empty_tensor({}, DType::f32, kGpu);
  kernels::cross_entropy_forward(logits.cuda, target, Tensor(), {}, losses, log_probs, total);
  CHECK_THROWS_WITH(cuda::synchronize(kGpu), Catch::Contains("target[123456] = 5 is out of range for 3 classes"));
  CHECK(test::copy_to(total, cpu()).item<float>() == static_cast<float>(rows - 3));
}

// The only bad target lies in the last block's range (blocks stride over the targets, block b
// taking kMaxReduceThreads of them at b * kMaxReduceThreads, then again a grid further on), and
// here in its third stride: a check whose combining step missed a block, or read only the first,
// would report no bad target and count one weight too many.
TEST_CASE("CUDA cross-entropy's target check finds a bad target that only the last block sees", "[cuda]") {
  const int64_t rows = 300'000;
  const int64_t blocks = cuda::target_check_blocks(rows);
  REQUIRE(blocks == 256);
  const int64_t grid = blocks * cuda::kMaxReduceThreads;
  const int64_t bad = 2 * grid + (blocks - 1) * cuda::kMaxReduceThreads + 37;
  REQUIRE(bad < rows);
  REQUIRE(bad % grid / cuda::kMaxReduceThreads == blocks - 1);
  std::vector<int64_t> labels(static_cast<size_t>(rows));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>(i % 3);
  labels[static_cast<size_t>(bad)] = 3;
  const test::TensorPair logits = test::random_pair({rows, 3}, DType::f32, -2, 2, 4202);
  const Tensor target = test::copy_to(from_vector<int64_t>(labels), kGpu);
  Tensor losses = test::empty_tensor({rows}, DType::f32, kGpu),
         log_probs = test::empty_tensor({rows, 3}, DType::f32, kGpu), total = test::empty_tensor({}, DType::f32, kGpu);
  kernels::cross_entropy_forward(logits.cuda, target, Tensor(), {}, losses, log_probs, total);
  CHECK_THROWS_WITH(cuda::synchronize(kGpu),
                    Catch::Contains("target[" + std::to_string(bad) + "] = 3 is out of range for 3 classes"));
  CHECK(test::copy_to(total, cpu()).item<float>() == static_cast<float>(rows - 1));
}
