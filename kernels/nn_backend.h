// NnBackend: one implementation of the NN kernels (nn_kernels.h) per device type.
//
// kernels/cpu registers the CPU one; the CUDA one (cuDNN) is not written yet, so an NN kernel
// on a CUDA tensor throws a clear error rather than falling into the tensor backend.
#pragma once

#include "duet/core/device.h"
#include "duet/kernels/nn_kernels.h"

namespace duet::kernels {

class NnBackend {
 public:
  virtual ~NnBackend() = default;
  virtual void conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride,
                              int64_t padding, const Tensor& out) = 0;
  virtual void conv2d_backward_input(const Tensor& grad_out, const Tensor& weight, int64_t stride,
                                     int64_t padding, const Tensor& grad_x) = 0;
  virtual void conv2d_backward_weight(const Tensor& grad_out, const Tensor& x, int64_t stride,
                                      int64_t padding, const Tensor& grad_weight) = 0;
  virtual void max_pool2d_forward(const Tensor& x, int64_t kernel, int64_t stride, int64_t padding,
                                  const Tensor& out, const Tensor& indices) = 0;
  virtual void max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, const Tensor& grad_x) = 0;
  virtual void avg_pool2d_forward(const Tensor& x, int64_t kernel, int64_t stride, int64_t padding,
                                  const Tensor& out) = 0;
  virtual void avg_pool2d_backward(const Tensor& grad_out, int64_t kernel, int64_t stride, int64_t padding,
                                   const Tensor& grad_x) = 0;
  virtual void adaptive_avg_pool2d_forward(const Tensor& x, const Tensor& out) = 0;
  virtual void adaptive_avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_x) = 0;
  virtual void batch_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                  const Tensor& running_mean, const Tensor& running_var, bool training,
                                  double momentum, double eps, const Tensor& out, const Tensor& save_mean,
                                  const Tensor& save_invstd) = 0;
  virtual void batch_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                                   const Tensor& save_mean, const Tensor& save_invstd, bool training,
                                   const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias) = 0;
  virtual void softmax_forward(const Tensor& x, int64_t dim, const Tensor& out) = 0;
  virtual void softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim, const Tensor& grad_x) = 0;
  virtual void log_softmax_forward(const Tensor& x, int64_t dim, const Tensor& out) = 0;
  virtual void log_softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim,
                                    const Tensor& grad_x) = 0;
  virtual void cross_entropy_forward(const Tensor& logits, const Tensor& target, const Tensor& losses,
                                     const Tensor& log_probs) = 0;
  virtual void cross_entropy_backward(const Tensor& grad_losses, const Tensor& log_probs, const Tensor& target,
                                      const Tensor& grad_logits) = 0;
};

NnBackend& cpu_nn_backend();
// The backend for `device`'s type. `op` names the caller in the error thrown when none is
// registered: "conv2d_forward on cuda:0: duet was built without CUDA".
NnBackend& nn_backend_for(Device device, const char* op);
void register_nn_backend(DeviceType type, NnBackend* backend);

}  // namespace duet::kernels
