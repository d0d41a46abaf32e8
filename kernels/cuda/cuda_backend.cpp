// The CUDA table: each entry checks that every operand is on the output's device, makes that
// device current and runs the launcher on its stream (launchers.h, nn_launchers.h). Registered
// when the library is loaded, with no CUDA call there.
//
// Reductions are duet's own kernels (reduce.cu), matmul goes to cuBLAS (matmul.cpp), conv2d and
// batch norm to cuDNN with duet's own kernels as fallbacks, the other NN kernels are duet's own.
#include <cstdlib>
#include <cstring>

#include "duet/kernels/backend.h"
#include "duet/kernels/conv2d_pool_composed.h"
#include "duet/kernels/cuda/cross_device_copy.h"
#include "duet/kernels/cuda/launchers.h"
#include "duet/kernels/cuda/nn_launchers.h"
#include "duet/kernels/cuda/on_device.h"

namespace duet::cuda {
namespace {

using kernels::BinaryOp;
using kernels::ReduceOp;
using kernels::UnaryOp;

// DUET_BATCH_NORM_KERNELS=duet runs batch norm on duet's own kernels instead of cuDNN. Read at
// every call, as DUET_CONV_IM2COL is, so a test can compare both paths in one process.
bool own_batch_norm_kernels_requested() {
  const char* value = std::getenv("DUET_BATCH_NORM_KERNELS");
  return value && std::strcmp(value, "duet") == 0;
}

// ---- kernels.h ----
void unary(UnaryOp op, const Tensor& in, const Tensor& out) {
  OnDevice on(kernels::name(op), out, {&in});
  launch_unary(op, in, out, on.stream());
}

void unary_backward(UnaryOp op, const Tensor& grad, const Tensor& in, const Tensor& out, const Tensor& grad_in) {
  OnDevice on(kernels::name(op), grad_in, {&grad, &in, &out});
  launch_unary_backward(op, grad, in, out, grad_in, on.stream());
}

void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  OnDevice on(kernels::name(op), out, {&a, &b});
  launch_binary(op, a, b, out, on.stream());
}

void binary_backward(BinaryOp op, const Tensor& grad, const Tensor& a, const Tensor& b, const Tensor& out,
                     const Tensor& grad_a, const Tensor& grad_b) {
  OnDevice on(kernels::name(op), grad, {&a, &b, &out, &grad_a, &grad_b});
  if (grad_a.defined()) launch_binary_backward(op, /*wrt_a=*/true, grad, a, b, out, grad_a, on.stream());
  if (grad_b.defined()) launch_binary_backward(op, /*wrt_a=*/false, grad, a, b, out, grad_b, on.stream());
}

void reduce(ReduceOp op, const Tensor& in, const std::vector<int64_t>& dims, const Tensor& out) {
  OnDevice on(kernels::name(op), out, {&in});
  launch_reduce(op, in, dims, out, on.stream());
}

void matmul(const Tensor& a, const Tensor& b, const Tensor& out) {
  OnDevice on("matmul", out, {&a, &b});
  launch_matmul(a, b, out, on.device(), on.stream());
}

void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out) {
  OnDevice on("where", out, {&cond, &a, &b});
  launch_where(cond, a, b, out, on.stream());
}

void copy(const Tensor& src, const Tensor& dst) {
  // dispatch.cpp sends every CUDA -> CUDA copy here, also between two logical devices.
  if (src.device() != dst.device()) {
    copy_across_devices(src, dst);
    return;
  }
  OnDevice on("copy", dst, {&src});
  launch_copy(src, dst, on.stream());
}

void fill(const Tensor& out, double value) {
  OnDevice on("fill", out, {});
  launch_fill(out, value, on.stream());
}

void arange(const Tensor& out, double start, double step) {
  OnDevice on("arange", out, {});
  launch_arange(out, start, step, on.stream());
}

void uniform(const Tensor& out, uint64_t seed, uint64_t offset, double low, double high) {
  OnDevice on("uniform", out, {});
  launch_uniform(out, seed, offset, low, high, on.stream());
}

void normal(const Tensor& out, uint64_t seed, uint64_t offset, double mean, double stddev) {
  OnDevice on("normal", out, {});
  launch_normal(out, seed, offset, mean, stddev, on.stream());
}

void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                const kernels::SgdUpdateArgs& args) {
  OnDevice on("sgd_update", param, {&grad, &momentum_buffer});
  launch_sgd_update(param, grad, momentum_buffer, args, on.stream());
}

void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                 const Tensor& max_exp_avg_sq, const kernels::AdamUpdateArgs& args) {
  OnDevice on("adam_update", param, {&grad, &exp_avg, &exp_avg_sq, &max_exp_avg_sq});
  launch_adam_update(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, args, on.stream());
}

// ---- nn_kernels.h ----
void conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const kernels::Conv2dGeometry& geometry,
                    const Tensor& out) {
  OnDevice on("conv2d_forward", out, {&x, &weight, &bias});
  launch_conv2d_forward(x, weight, bias, geometry, out, on.device(), on.stream());
}
void conv2d_backward_input(const Tensor& grad_out, const Tensor& weight, const kernels::Conv2dGeometry& geometry,
                           const Tensor& grad_x) {
  OnDevice on("conv2d_backward_input", grad_x, {&grad_out, &weight});
  launch_conv2d_backward_input(grad_out, weight, geometry, grad_x, on.device(), on.stream());
}
void conv2d_backward_weight(const Tensor& grad_out, const Tensor& x, const kernels::Conv2dGeometry& geometry,
                            const Tensor& grad_weight, const Tensor& grad_bias) {
  OnDevice on("conv2d_backward_weight", grad_weight, {&grad_out, &x, &grad_bias});
  launch_conv2d_backward_weight(grad_out, x, geometry, grad_weight, on.device(), on.stream());
  // The bias gradient is a reduction of its own here: cuDNN's weight gradient does not sum it.
  if (grad_bias.defined()) {
    launch_reduce(ReduceOp::sum, grad_out, {0, 2, 3}, grad_bias.view({1, grad_bias.size(0), 1, 1}), on.stream());
  }
}

void max_pool2d_forward(const Tensor& x, const kernels::Pool2dGeometry& geometry, const Tensor& out,
                        const Tensor& indices) {
  OnDevice on("max_pool2d_forward", out, {&x, &indices});
  launch_max_pool2d_forward(x, geometry, out, indices, on.stream());
}
void max_pool2d_backward(const Tensor& grad_out, const Tensor& indices,
                         const std::optional<kernels::Pool2dGeometry>& window, const Tensor& grad_x) {
  OnDevice on("max_pool2d_backward", grad_x, {&grad_out, &indices});
  launch_max_pool2d_backward(grad_out, indices, window, grad_x, on.stream());
}
void avg_pool2d_forward(const Tensor& x, const kernels::Pool2dGeometry& geometry,
                        std::optional<kernels::UnaryOp> activation, const Tensor& out) {
  OnDevice on(kernels::avg_pool2d_name(activation, false), out, {&x});
  launch_avg_pool2d_forward(x, geometry, activation, out, on.stream());
}
void avg_pool2d_backward(const Tensor& grad_out, const Tensor& x, const kernels::Pool2dGeometry& geometry,
                         std::optional<kernels::UnaryOp> activation, const Tensor& grad_x) {
  OnDevice on(kernels::avg_pool2d_name(activation, true), grad_x, {&grad_out, &x});
  launch_avg_pool2d_backward(grad_out, x, geometry, activation, grad_x, on.stream());
}
void adaptive_avg_pool2d_forward(const Tensor& x, const Tensor& out) {
  OnDevice on("adaptive_avg_pool2d_forward", out, {&x});
  launch_adaptive_avg_pool2d_forward(x, out, on.stream());
}
void adaptive_avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_x) {
  OnDevice on("adaptive_avg_pool2d_backward", grad_x, {&grad_out});
  launch_adaptive_avg_pool2d_backward(grad_out, grad_x, on.stream());
}
void adaptive_max_pool2d_forward(const Tensor& x, const Tensor& out, const Tensor& indices) {
  OnDevice on("adaptive_max_pool2d_forward", out, {&x, &indices});
  launch_adaptive_max_pool2d_forward(x, out, indices, on.stream());
}

void batch_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                        const Tensor& running_var, bool training, double momentum, double eps, const Tensor& out,
                        const Tensor& save_mean, const Tensor& save_invstd) {
  OnDevice on("batch_norm_forward", out, {&x, &weight, &bias, &running_mean, &running_var, &save_mean, &save_invstd});
  if (own_batch_norm_kernels_requested() ||
      !ran_in_cudnn(cudnn_batch_norm_forward(x, weight, bias, running_mean, running_var, training, momentum, eps, out,
                                             save_mean, save_invstd, on.device(), on.stream())))
    launch_batch_norm_forward(x, weight, bias, running_mean, running_var, training, momentum, eps, out, save_mean,
                              save_invstd, on.stream());
}
void batch_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight, const Tensor& save_mean,
                         const Tensor& save_invstd, bool training, const Tensor& grad_x, const Tensor& grad_weight,
                         const Tensor& grad_bias) {
  // Any of the three gradients may be undefined; the device is the input's.
  OnDevice on("batch_norm_backward", x,
              {&grad_out, &weight, &save_mean, &save_invstd, &grad_x, &grad_weight, &grad_bias});
  if (own_batch_norm_kernels_requested() ||
      !ran_in_cudnn(cudnn_batch_norm_backward(grad_out, x, weight, save_mean, save_invstd, training, grad_x,
                                              grad_weight, grad_bias, on.device(), on.stream())))
    launch_batch_norm_backward(grad_out, x, weight, save_mean, save_invstd, training, grad_x, grad_weight, grad_bias,
                               on.stream());
}

// softmax (kLog false) and log_softmax (kLog true) share their launchers.
template <bool kLog> void softmax_forward(const Tensor& x, int64_t dim, const Tensor& out) {
  OnDevice on(kLog ? "log_softmax_forward" : "softmax_forward", out, {&x});
  launch_softmax_forward(kLog, x, dim, out, on.stream());
}
template <bool kLog>
void softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim, const Tensor& grad_x) {
  OnDevice on(kLog ? "log_softmax_backward" : "softmax_backward", grad_x, {&grad_out, &out});
  launch_softmax_backward(kLog, grad_out, out, dim, grad_x, on.stream());
}

void cross_entropy_forward(const Tensor& logits, const Tensor& target, const Tensor& weight,
                           const kernels::CrossEntropyTerms& terms, const Tensor& losses, const Tensor& log_probs,
                           const Tensor& total_weight) {
  OnDevice on("cross_entropy_forward", losses, {&logits, &target, &weight, &log_probs, &total_weight});
  launch_cross_entropy_forward(logits, target, weight, terms, losses, log_probs, total_weight, on.stream());
}
void cross_entropy_backward(const Tensor& grad_losses, const Tensor& log_probs, const Tensor& target,
                            const Tensor& weight, const kernels::CrossEntropyTerms& terms, const Tensor& grad_logits) {
  OnDevice on("cross_entropy_backward", grad_logits, {&grad_losses, &log_probs, &target, &weight});
  launch_cross_entropy_backward(grad_losses, log_probs, target, weight, terms, grad_logits, on.stream());
}

constexpr kernels::Backend kCudaBackend{
    .unary = unary,
    .unary_backward = unary_backward,
    .binary = binary,
    .binary_backward = binary_backward,
    .reduce = reduce,
    .matmul = matmul,
    .where = where,
    .copy = copy,
    .fill = fill,
    .arange = arange,
    .uniform = uniform,
    .normal = normal,
    .sgd_update = sgd_update,
    .adam_update = adam_update,
    .conv2d_forward = conv2d_forward,
    .conv2d_backward_input = conv2d_backward_input,
    .conv2d_backward_weight = conv2d_backward_weight,
    .max_pool2d_forward = max_pool2d_forward,
    .max_pool2d_backward = max_pool2d_backward,
    .avg_pool2d_forward = avg_pool2d_forward,
    .avg_pool2d_backward = avg_pool2d_backward,
    .conv2d_avg_pool2d_forward = kernels::composed_conv2d_avg_pool2d_forward,
    .conv2d_avg_pool2d_backward = kernels::composed_conv2d_avg_pool2d_backward,
    .adaptive_avg_pool2d_forward = adaptive_avg_pool2d_forward,
    .adaptive_avg_pool2d_backward = adaptive_avg_pool2d_backward,
    .adaptive_max_pool2d_forward = adaptive_max_pool2d_forward,
    .batch_norm_forward = batch_norm_forward,
    .batch_norm_backward = batch_norm_backward,
    .softmax_forward = softmax_forward<false>,
    .softmax_backward = softmax_backward<false>,
    .log_softmax_forward = softmax_forward<true>,
    .log_softmax_backward = softmax_backward<true>,
    .cross_entropy_forward = cross_entropy_forward,
    .cross_entropy_backward = cross_entropy_backward,
};

[[maybe_unused]] const bool cuda_backend_registered = [] {
  kernels::register_backend(DeviceType::CUDA, &kCudaBackend);
  return true;
}();

}  // namespace
}  // namespace duet::cuda
