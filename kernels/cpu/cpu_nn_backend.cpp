#include "duet/kernels/cpu/cpu_nn_backend.h"

namespace duet::kernels {

namespace cpu {

void CpuNnBackend::conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride,
                                  int64_t padding, const Tensor& out) {
  cpu::conv2d_forward(x, weight, bias, stride, padding, out);
}
void CpuNnBackend::conv2d_backward_input(const Tensor& grad_out, const Tensor& weight, int64_t stride,
                                         int64_t padding, const Tensor& grad_x) {
  cpu::conv2d_backward_input(grad_out, weight, stride, padding, grad_x);
}
void CpuNnBackend::conv2d_backward_weight(const Tensor& grad_out, const Tensor& x, int64_t stride,
                                          int64_t padding, const Tensor& grad_weight) {
  cpu::conv2d_backward_weight(grad_out, x, stride, padding, grad_weight);
}
void CpuNnBackend::max_pool2d_forward(const Tensor& x, int64_t kernel, int64_t stride, int64_t padding,
                                      const Tensor& out, const Tensor& indices) {
  cpu::max_pool2d_forward(x, kernel, stride, padding, out, indices);
}
void CpuNnBackend::max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, const Tensor& grad_x) {
  cpu::max_pool2d_backward(grad_out, indices, grad_x);
}
void CpuNnBackend::avg_pool2d_forward(const Tensor& x, int64_t kernel, int64_t stride, int64_t padding,
                                      const Tensor& out) {
  cpu::avg_pool2d_forward(x, kernel, stride, padding, out);
}
void CpuNnBackend::avg_pool2d_backward(const Tensor& grad_out, int64_t kernel, int64_t stride, int64_t padding,
                                       const Tensor& grad_x) {
  cpu::avg_pool2d_backward(grad_out, kernel, stride, padding, grad_x);
}
void CpuNnBackend::adaptive_avg_pool2d_forward(const Tensor& x, const Tensor& out) {
  cpu::adaptive_avg_pool2d_forward(x, out);
}
void CpuNnBackend::adaptive_avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_x) {
  cpu::adaptive_avg_pool2d_backward(grad_out, grad_x);
}
void CpuNnBackend::batch_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                      const Tensor& running_mean, const Tensor& running_var, bool training,
                                      double momentum, double eps, const Tensor& out, const Tensor& save_mean,
                                      const Tensor& save_invstd) {
  cpu::batch_norm_forward(x, weight, bias, running_mean, running_var, training, momentum, eps, out, save_mean,
                          save_invstd);
}
void CpuNnBackend::batch_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                                       const Tensor& save_mean, const Tensor& save_invstd, bool training,
                                       const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias) {
  cpu::batch_norm_backward(grad_out, x, weight, save_mean, save_invstd, training, grad_x, grad_weight, grad_bias);
}
void CpuNnBackend::softmax_forward(const Tensor& x, int64_t dim, const Tensor& out) {
  cpu::softmax_forward(x, dim, out);
}
void CpuNnBackend::softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim,
                                    const Tensor& grad_x) {
  cpu::softmax_backward(grad_out, out, dim, grad_x);
}
void CpuNnBackend::log_softmax_forward(const Tensor& x, int64_t dim, const Tensor& out) {
  cpu::log_softmax_forward(x, dim, out);
}
void CpuNnBackend::log_softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim,
                                        const Tensor& grad_x) {
  cpu::log_softmax_backward(grad_out, out, dim, grad_x);
}
void CpuNnBackend::cross_entropy_forward(const Tensor& logits, const Tensor& target, const Tensor& losses,
                                         const Tensor& log_probs) {
  cpu::cross_entropy_forward(logits, target, losses, log_probs);
}
void CpuNnBackend::cross_entropy_backward(const Tensor& grad_losses, const Tensor& log_probs,
                                          const Tensor& target, const Tensor& grad_logits) {
  cpu::cross_entropy_backward(grad_losses, log_probs, target, grad_logits);
}

}  // namespace cpu

NnBackend& cpu_nn_backend() {
  static cpu::CpuNnBackend instance;
  return instance;
}

}  // namespace duet::kernels
