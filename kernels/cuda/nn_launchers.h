// Host entry points of the CUDA NN kernels, one per function of nn_kernels.h with the same
// contract (read that header for shapes and semantics). Each enqueues on `stream`: its operands
// were checked by kernels/nn_dispatch.cpp, and the caller (cuda_backend.cpp) has checked devices
// and made the device current.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "duet/core/tensor.h"
#include "duet/kernels/nn_kernels.h"

namespace duet::cuda {

// softmax.cu: one block per row, sums in double as on the CPU; log_softmax when `log_softmax`.
void launch_softmax_forward(bool log_softmax, const Tensor& x, int64_t dim, const Tensor& out, cudaStream_t stream);
void launch_softmax_backward(bool log_softmax, const Tensor& grad_out, const Tensor& out, int64_t dim,
                             const Tensor& grad_x, cudaStream_t stream);

// cross_entropy.cu. The forward checks the targets on the device without waiting: a bad target
// throws the CPU's error when the host next waits for the device (bad_label.h). Neither reads
// outside a row for a bad target (its loss is NaN, its gradient row zero).
void launch_cross_entropy_forward(const Tensor& logits, const Tensor& target, const Tensor& weight,
                                  const kernels::CrossEntropyTerms& terms, const Tensor& losses,
                                  const Tensor& log_probs, const Tensor& total_weight, cudaStream_t stream);
void launch_cross_entropy_backward(const Tensor& grad_losses, const Tensor& log_probs, const Tensor& target,
                                   const Tensor& weight, const kernels::CrossEntropyTerms& terms,
                                   const Tensor& grad_logits, cudaStream_t stream);

// pool2d.cu
void launch_max_pool2d_forward(const Tensor& x, const kernels::Pool2dGeometry& geometry, const Tensor& out,
                               const Tensor& indices, cudaStream_t stream);
void launch_max_pool2d_backward(const Tensor& grad_out, const Tensor& indices,
                                const std::optional<kernels::Pool2dGeometry>& window, const Tensor& grad_x,
                                cudaStream_t stream);
void launch_avg_pool2d_forward(const Tensor& x, const kernels::Pool2dGeometry& geometry,
                               std::optional<kernels::UnaryOp> activation, const Tensor& out, cudaStream_t stream);
void launch_avg_pool2d_backward(const Tensor& grad_out, const Tensor& x, const kernels::Pool2dGeometry& geometry,
                                std::optional<kernels::UnaryOp> activation, const Tensor& grad_x, cudaStream_t stream);
void launch_adaptive_avg_pool2d_forward(const Tensor& x, const Tensor& out, cudaStream_t stream);
void launch_adaptive_avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_x, cudaStream_t stream);
void launch_adaptive_max_pool2d_forward(const Tensor& x, const Tensor& out, const Tensor& indices, cudaStream_t stream);

// Batch norm: cuDNN first, duet's own kernels where it declines or under
// DUET_BATCH_NORM_KERNELS=duet (the choice is cuda_backend.cpp's).
//
// batch_norm.cu: duet's own kernels, one block per channel, or per slice of one when there are few.
void launch_batch_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                               const Tensor& running_var, bool training, double momentum, double eps, const Tensor& out,
                               const Tensor& save_mean, const Tensor& save_invstd, cudaStream_t stream);
void launch_batch_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight, const Tensor& save_mean,
                                const Tensor& save_invstd, bool training, const Tensor& grad_x,
                                const Tensor& grad_weight, const Tensor& grad_bias, cudaStream_t stream);
// What an inference forward leaves for the backward pass, as launch_batch_norm_forward writes it:
// save_mean = running_mean, save_invstd = 1 / sqrt(running_var + eps). For the cuDNN path, whose
// inference call writes neither.
void launch_batch_norm_inference_stats(const Tensor& running_mean, const Tensor& running_var, double eps,
                                       const Tensor& save_mean, const Tensor& save_invstd, cudaStream_t stream);

// Passes on whether a cuDNN path ran, counting the calls it declined (runtime.h's
// cudnn_declined()); in a build without cuDNN nothing is counted, since nothing was declined.
bool ran_in_cudnn(bool ran);

// batch_norm_cudnn.cpp: cuDNN (in a build without it, cudnn_unavailable.cpp: always false). Each
// returns false, having written nothing, when cuDNN does not take the case: eps below CUDNN_BN_MIN_EPSILON, an
// empty x or one of 2^31 - 1 elements or more, a strided operand, backward with training = false
// (cuDNN's backward always differentiates through the batch statistics), or a NOT_SUPPORTED
// status, which cuDNN gives before it launches anything; every other failure throws. They run on
// `device`'s stream, to which its cuDNN handle is bound.
bool cudnn_batch_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                              const Tensor& running_var, bool training, double momentum, double eps, const Tensor& out,
                              const Tensor& save_mean, const Tensor& save_invstd, Device device, cudaStream_t stream);
bool cudnn_batch_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight, const Tensor& save_mean,
                               const Tensor& save_invstd, bool training, const Tensor& grad_x,
                               const Tensor& grad_weight, const Tensor& grad_bias, Device device, cudaStream_t stream);

// conv2d.cpp: cuDNN, or im2col + cuBLAS under DUET_CONV_IM2COL=1 or where cuDNN declines.
void launch_conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                           const kernels::Conv2dGeometry& geometry, const Tensor& out, Device device,
                           cudaStream_t stream);
void launch_conv2d_backward_input(const Tensor& grad_out, const Tensor& weight, const kernels::Conv2dGeometry& geometry,
                                  const Tensor& grad_x, Device device, cudaStream_t stream);
void launch_conv2d_backward_weight(const Tensor& grad_out, const Tensor& x, const kernels::Conv2dGeometry& geometry,
                                   const Tensor& grad_weight, Device device, cudaStream_t stream);

}  // namespace duet::cuda
