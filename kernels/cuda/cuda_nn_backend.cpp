// The CUDA NN backend: checks that every operand is on the output's device, makes that device
// current and runs the launcher (nn_launchers.h) on its stream. Registered at load time, like
// the tensor backend (cuda_backend.cpp), with no CUDA call there.
#include <cstdlib>
#include <cstring>

#include "duet/kernels/cuda/cudnn_handle.h"
#include "duet/kernels/cuda/nn_launchers.h"
#include "duet/kernels/cuda/on_device.h"
#include "duet/kernels/nn_backend.h"

namespace duet::cuda {
namespace {

// DUET_BATCH_NORM_KERNELS=duet runs batch norm on duet's own kernels instead of cuDNN. Read at
// every call, as DUET_CONV_IM2COL is, so a test can compare both paths in one process.
bool own_batch_norm_kernels_requested() {
  const char* value = std::getenv("DUET_BATCH_NORM_KERNELS");
  return value && std::strcmp(value, "duet") == 0;
}

class CudaNnBackend final : public kernels::NnBackend {
 public:
  void conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride, int64_t padding,
                      const Tensor& out) override {
    OnDevice on("conv2d_forward", out, {&x, &weight, &bias});
    launch_conv2d_forward(x, weight, bias, stride, padding, out, on.device(), on.stream());
  }
  void conv2d_backward_input(const Tensor& grad_out, const Tensor& weight, int64_t stride, int64_t padding,
                             const Tensor& grad_x) override {
    OnDevice on("conv2d_backward_input", grad_x, {&grad_out, &weight});
    launch_conv2d_backward_input(grad_out, weight, stride, padding, grad_x, on.device(), on.stream());
  }
  void conv2d_backward_weight(const Tensor& grad_out, const Tensor& x, int64_t stride, int64_t padding,
                              const Tensor& grad_weight) override {
    OnDevice on("conv2d_backward_weight", grad_weight, {&grad_out, &x});
    launch_conv2d_backward_weight(grad_out, x, stride, padding, grad_weight, on.device(), on.stream());
  }

  void max_pool2d_forward(const Tensor& x, int64_t kernel, int64_t stride, int64_t padding, const Tensor& out,
                          const Tensor& indices) override {
    OnDevice on("max_pool2d_forward", out, {&x, &indices});
    launch_max_pool2d_forward(x, kernel, stride, padding, out, indices, on.stream());
  }
  void max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, const Tensor& grad_x) override {
    OnDevice on("max_pool2d_backward", grad_x, {&grad_out, &indices});
    launch_max_pool2d_backward(grad_out, indices, grad_x, on.stream());
  }
  void avg_pool2d_forward(const Tensor& x, int64_t kernel, int64_t stride, int64_t padding,
                          const Tensor& out) override {
    OnDevice on("avg_pool2d_forward", out, {&x});
    launch_avg_pool2d_forward(x, kernel, stride, padding, out, on.stream());
  }
  void avg_pool2d_backward(const Tensor& grad_out, int64_t kernel, int64_t stride, int64_t padding,
                           const Tensor& grad_x) override {
    OnDevice on("avg_pool2d_backward", grad_x, {&grad_out});
    launch_avg_pool2d_backward(grad_out, kernel, stride, padding, grad_x, on.stream());
  }
  void adaptive_avg_pool2d_forward(const Tensor& x, const Tensor& out) override {
    OnDevice on("adaptive_avg_pool2d_forward", out, {&x});
    launch_adaptive_avg_pool2d_forward(x, out, on.stream());
  }
  void adaptive_avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_x) override {
    OnDevice on("adaptive_avg_pool2d_backward", grad_x, {&grad_out});
    launch_adaptive_avg_pool2d_backward(grad_out, grad_x, on.stream());
  }

  void batch_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                          const Tensor& running_var, bool training, double momentum, double eps, const Tensor& out,
                          const Tensor& save_mean, const Tensor& save_invstd) override {
    OnDevice on("batch_norm_forward", out, {&x, &weight, &bias, &running_mean, &running_var, &save_mean, &save_invstd});
    check_batch_norm_forward(x, weight, bias, running_mean, running_var, training, out, save_mean, save_invstd);
    if (own_batch_norm_kernels_requested() ||
        !ran_in_cudnn(cudnn_batch_norm_forward(x, weight, bias, running_mean, running_var, training, momentum, eps,
                                               out, save_mean, save_invstd, on.device(), on.stream())))
      launch_batch_norm_forward(x, weight, bias, running_mean, running_var, training, momentum, eps, out, save_mean,
                                save_invstd, on.stream());
  }
  void batch_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight, const Tensor& save_mean,
                           const Tensor& save_invstd, bool training, const Tensor& grad_x, const Tensor& grad_weight,
                           const Tensor& grad_bias) override {
    // Any of the three gradients may be undefined; the device is the input's.
    OnDevice on("batch_norm_backward", x, {&grad_out, &weight, &save_mean, &save_invstd, &grad_x, &grad_weight,
                                            &grad_bias});
    check_batch_norm_backward(grad_out, x, weight, save_mean, save_invstd, grad_x, grad_weight, grad_bias);
    if (own_batch_norm_kernels_requested() ||
        !ran_in_cudnn(cudnn_batch_norm_backward(grad_out, x, weight, save_mean, save_invstd, training, grad_x,
                                                grad_weight, grad_bias, on.device(), on.stream())))
      launch_batch_norm_backward(grad_out, x, weight, save_mean, save_invstd, training, grad_x, grad_weight,
                                 grad_bias, on.stream());
  }

  void softmax_forward(const Tensor& x, int64_t dim, const Tensor& out) override {
    OnDevice on("softmax_forward", out, {&x});
    launch_softmax_forward(x, dim, out, on.stream());
  }
  void softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim, const Tensor& grad_x) override {
    OnDevice on("softmax_backward", grad_x, {&grad_out, &out});
    launch_softmax_backward(grad_out, out, dim, grad_x, on.stream());
  }
  void log_softmax_forward(const Tensor& x, int64_t dim, const Tensor& out) override {
    OnDevice on("log_softmax_forward", out, {&x});
    launch_log_softmax_forward(x, dim, out, on.stream());
  }
  void log_softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim, const Tensor& grad_x) override {
    OnDevice on("log_softmax_backward", grad_x, {&grad_out, &out});
    launch_log_softmax_backward(grad_out, out, dim, grad_x, on.stream());
  }

  void cross_entropy_forward(const Tensor& logits, const Tensor& target, const Tensor& losses,
                             const Tensor& log_probs) override {
    OnDevice on("cross_entropy_forward", losses, {&logits, &target, &log_probs});
    launch_cross_entropy_forward(logits, target, losses, log_probs, on.stream());
  }
  void cross_entropy_backward(const Tensor& grad_losses, const Tensor& log_probs, const Tensor& target,
                              const Tensor& grad_logits) override {
    OnDevice on("cross_entropy_backward", grad_logits, {&grad_losses, &log_probs, &target});
    launch_cross_entropy_backward(grad_losses, log_probs, target, grad_logits, on.stream());
  }
};

[[maybe_unused]] const bool registered = [] {
  // Leaked on purpose: kernels may run from static destructors after this file's statics die.
  kernels::register_nn_backend(DeviceType::CUDA, new CudaNnBackend());
  return true;
}();

}  // namespace
}  // namespace duet::cuda
