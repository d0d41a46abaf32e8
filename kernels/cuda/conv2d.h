// The two CUDA implementations of conv2d behind launch_conv2d_* (conv2d.cpp): cuDNN
// (conv2d_cudnn.cpp) and a plain im2col + cuBLAS path (conv2d_im2col.cu). Operands are
// contiguous NCHW tensors of one floating dtype, checked against their ConvLayout
// (kernels/nn_layouts.h) by kernels/nn_dispatch.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "duet/core/tensor.h"
#include "duet/kernels/nn_layouts.h"

namespace duet::cuda {

using kernels::ConvLayout;

// cuDNN. Each tries cuDNN's ranked algorithms that are deterministic and, for f32 without
// set_allow_tf32, free of TF32, in order, and keeps the first that runs for the shape; it
// returns false when cuDNN offers none or none runs (the caller then runs im2col, which
// overwrites whatever a failed attempt wrote). Errors outside the attempts throw, and so does
// any failure while a CUDA graph records the device. They run on `device`'s stream, to which
// its cuDNN handle is bound.
bool cudnn_conv2d_forward(const ConvLayout& g, const Tensor& x, const Tensor& weight, const Tensor& out, Device device);
bool cudnn_conv2d_backward_input(const ConvLayout& g, const Tensor& grad_out, const Tensor& weight,
                                 const Tensor& grad_x, Device device);
bool cudnn_conv2d_backward_weight(const ConvLayout& g, const Tensor& grad_out, const Tensor& x,
                                  const Tensor& grad_weight, Device device);

// im2col + cuBLAS, images in chunks whose column matrices fit a bounded scratch buffer.
void im2col_conv2d_forward(const ConvLayout& g, const Tensor& x, const Tensor& weight, const Tensor& out, Device device,
                           cudaStream_t stream);
void im2col_conv2d_backward_input(const ConvLayout& g, const Tensor& grad_out, const Tensor& weight,
                                  const Tensor& grad_x, Device device, cudaStream_t stream);
void im2col_conv2d_backward_weight(const ConvLayout& g, const Tensor& grad_out, const Tensor& x,
                                   const Tensor& grad_weight, Device device, cudaStream_t stream);

// out[n, k, :, :] += bias[k] (conv2d_im2col.cu).
void add_channel_bias(const Tensor& out, const Tensor& bias, cudaStream_t stream);

}  // namespace duet::cuda
