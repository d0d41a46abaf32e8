// Fused optimizer updates. Spelled with elementwise ops, one step costs 2 to 9 kernels (SGD, by
// its options) or 13 to 15 (Adam), each a full pass over the parameter's memory; these read the
// parameter, its gradient and its state once and write the parameter and the state once.
//
// Contract, shared by both functions and checked once for every backend (optim_dispatch.cpp),
// which throws naming the op and the offending tensors otherwise: every tensor is contiguous,
// of one floating dtype (f32 or f64), one shape and one device, and no two share storage.
//
// The math lives in kernels/optim_functors.h, used by the CPU loop and the CUDA kernel alike.
// Each hyperparameter is rounded to the tensors' dtype once and every intermediate is rounded
// as the unfused ops round it, so on the CPU the result is bitwise the unfused one.
#pragma once

#include "duet/core/tensor.h"

namespace duet::kernels {

struct SgdUpdateArgs {
  double lr = 0;
  double momentum = 0;  // 0: no momentum; momentum_buffer is then unused and may be undefined
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
  bool first_step = false;  // the buffer has no history yet: it becomes the gradient (PyTorch)
  bool maximize = false;    // ascend: the gradient's sign flipped before anything else
};

// PyTorch's SGD, per element, with g = grad + weight_decay * param (-grad with maximize):
//   without momentum: param -= lr * g
//   with momentum:    buf = first_step ? g : momentum * buf + (1 - dampening) * g
//                     param -= lr * (nesterov ? g + momentum * buf : buf)
void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer, const SgdUpdateArgs& args);

struct AdamUpdateArgs {
  double lr = 0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool decoupled_weight_decay = false;  // AdamW
  bool amsgrad = false;                 // normalise by the running maximum of v (max_exp_avg_sq), not v
  double bias_correction1 = 1;          // 1 - beta1^t for the step t being taken
  double bias_correction2 = 1;          // 1 - beta2^t
  bool maximize = false;                // ascend: the gradient's sign flipped before anything else
};

// PyTorch's Adam and AdamW (1.13), per element, with grad negated first under maximize:
//   Adam:  g = grad + weight_decay * param;   AdamW: param *= 1 - lr * weight_decay
//   m = beta1 * m + (1 - beta1) * g;   v = beta2 * v + (1 - beta2) * g * g
//   amsgrad: max_v = maximum(max_v, v) (NaN propagates, as torch.maximum), and max_v stands for v below
//   param -= lr / bias_correction1 * m / (sqrt(v) / sqrt(bias_correction2) + eps)
// max_exp_avg_sq is an operand only with amsgrad (undefined otherwise, and then ignored).
void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                 const Tensor& max_exp_avg_sq, const AdamUpdateArgs& args);

}  // namespace duet::kernels
