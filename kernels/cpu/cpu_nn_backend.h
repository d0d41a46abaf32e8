// The CPU NN backend: kernels::cpu's NN kernels behind the NnBackend interface. Each group
// lives in its own file; their contracts are those of kernels/nn_kernels.h.
#pragma once

#include "duet/kernels/nn_backend.h"

namespace duet::kernels::cpu {

// conv2d.cpp
void conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride, int64_t padding,
                    const Tensor& out);
void conv2d_backward_input(const Tensor& grad_out, const Tensor& weight, int64_t stride, int64_t padding,
                           const Tensor& grad_x);
void conv2d_backward_weight(const Tensor& grad_out, const Tensor& x, int64_t stride, int64_t padding,
                            const Tensor& grad_weight);
// pool2d.cpp
void max_pool2d_forward(const Tensor& x, int64_t kernel, int64_t stride, int64_t padding, const Tensor& out,
                        const Tensor& indices);
void max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, const Tensor& grad_x);
void avg_pool2d_forward(const Tensor& x, int64_t kernel, int64_t stride, int64_t padding, const Tensor& out);
void avg_pool2d_backward(const Tensor& grad_out, int64_t kernel, int64_t stride, int64_t padding,
                         const Tensor& grad_x);
void adaptive_avg_pool2d_forward(const Tensor& x, const Tensor& out);
void adaptive_avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_x);
// batch_norm.cpp
void batch_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                        const Tensor& running_var, bool training, double momentum, double eps, const Tensor& out,
                        const Tensor& save_mean, const Tensor& save_invstd);
void batch_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight, const Tensor& save_mean,
                         const Tensor& save_invstd, bool training, const Tensor& grad_x, const Tensor& grad_weight,
                         const Tensor& grad_bias);
// softmax.cpp
void softmax_forward(const Tensor& x, int64_t dim, const Tensor& out);
void softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim, const Tensor& grad_x);
void log_softmax_forward(const Tensor& x, int64_t dim, const Tensor& out);
void log_softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim, const Tensor& grad_x);
// cross_entropy.cpp
void cross_entropy_forward(const Tensor& logits, const Tensor& target, const Tensor& losses,
                           const Tensor& log_probs);
void cross_entropy_backward(const Tensor& grad_losses, const Tensor& log_probs, const Tensor& target,
                            const Tensor& grad_logits);

class CpuNnBackend final : public NnBackend {
 public:
  void conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride, int64_t padding,
                      const Tensor& out) override;
  void conv2d_backward_input(const Tensor& grad_out, const Tensor& weight, int64_t stride, int64_t padding,
                             const Tensor& grad_x) override;
  void conv2d_backward_weight(const Tensor& grad_out, const Tensor& x, int64_t stride, int64_t padding,
                              const Tensor& grad_weight) override;
  void max_pool2d_forward(const Tensor& x, int64_t kernel, int64_t stride, int64_t padding, const Tensor& out,
                          const Tensor& indices) override;
  void max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, const Tensor& grad_x) override;
  void avg_pool2d_forward(const Tensor& x, int64_t kernel, int64_t stride, int64_t padding,
                          const Tensor& out) override;
  void avg_pool2d_backward(const Tensor& grad_out, int64_t kernel, int64_t stride, int64_t padding,
                           const Tensor& grad_x) override;
  void adaptive_avg_pool2d_forward(const Tensor& x, const Tensor& out) override;
  void adaptive_avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_x) override;
  void batch_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                          const Tensor& running_var, bool training, double momentum, double eps, const Tensor& out,
                          const Tensor& save_mean, const Tensor& save_invstd) override;
  void batch_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight, const Tensor& save_mean,
                           const Tensor& save_invstd, bool training, const Tensor& grad_x,
                           const Tensor& grad_weight, const Tensor& grad_bias) override;
  void softmax_forward(const Tensor& x, int64_t dim, const Tensor& out) override;
  void softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim, const Tensor& grad_x) override;
  void log_softmax_forward(const Tensor& x, int64_t dim, const Tensor& out) override;
  void log_softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim,
                            const Tensor& grad_x) override;
  void cross_entropy_forward(const Tensor& logits, const Tensor& target, const Tensor& losses,
                             const Tensor& log_probs) override;
  void cross_entropy_backward(const Tensor& grad_losses, const Tensor& log_probs, const Tensor& target,
                              const Tensor& grad_logits) override;
};

}  // namespace duet::kernels::cpu
