// The two CUDA implementations of conv2d behind launch_conv2d_* (conv2d.cpp): cuDNN
// (conv2d_cudnn.cpp) and a plain im2col + cuBLAS path (conv2d_im2col.cu). Operands are
// contiguous NCHW tensors of one floating dtype, already checked against the geometry.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "duet/core/tensor.h"

namespace duet::cuda {

struct ConvGeometry {
  int64_t batch, channels, height, width;  // x
  int64_t filters, kernel_h, kernel_w;     // weight [filters, channels, kernel_h, kernel_w]
  int64_t stride, padding;
  int64_t out_h, out_w;

  int64_t patch_size() const { return channels * kernel_h * kernel_w; }  // rows of a column matrix
  int64_t out_pixels() const { return out_h * out_w; }                   // its columns
  int64_t image_size() const { return channels * height * width; }
  // A 1x1 kernel with stride 1 and no padding: an image is its own column matrix.
  bool is_pointwise() const { return kernel_h == 1 && kernel_w == 1 && stride == 1 && padding == 0; }
};

// cuDNN. Each tries cuDNN's ranked algorithms that are deterministic and, for f32 without
// set_allow_tf32, free of TF32, in order, and keeps the first that runs for the shape; it
// returns false when cuDNN offers none or none runs (the caller then runs im2col, which
// overwrites whatever a failed attempt wrote). Errors outside the attempts throw, and so does
// any failure while a CUDA graph records the device. They run on `device`'s stream, to which
// its cuDNN handle is bound.
bool cudnn_conv2d_forward(const ConvGeometry& g, const Tensor& x, const Tensor& weight, const Tensor& out,
                          Device device);
bool cudnn_conv2d_backward_input(const ConvGeometry& g, const Tensor& grad_out, const Tensor& weight,
                                 const Tensor& grad_x, Device device);
bool cudnn_conv2d_backward_weight(const ConvGeometry& g, const Tensor& grad_out, const Tensor& x,
                                  const Tensor& grad_weight, Device device);

// im2col + cuBLAS, images in chunks whose column matrices fit a bounded scratch buffer.
void im2col_conv2d_forward(const ConvGeometry& g, const Tensor& x, const Tensor& weight, const Tensor& out,
                           Device device, cudaStream_t stream);
void im2col_conv2d_backward_input(const ConvGeometry& g, const Tensor& grad_out, const Tensor& weight,
                                  const Tensor& grad_x, Device device, cudaStream_t stream);
void im2col_conv2d_backward_weight(const ConvGeometry& g, const Tensor& grad_out, const Tensor& x,
                                   const Tensor& grad_weight, Device device, cudaStream_t stream);

// out[n, k, :, :] += bias[k] (conv2d_im2col.cu).
void add_channel_bias(const Tensor& out, const Tensor& bias, cudaStream_t stream);

}  // namespace duet::cuda
