// conv2d on CUDA: cuDNN, or the im2col + cuBLAS path when DUET_CONV_IM2COL=1 is set or cuDNN
// declines the case (conv2d.h).
#include "duet/kernels/cuda/conv2d.h"
#include "duet/kernels/conv_im2col_env.h"
#include "duet/kernels/cuda/launchers.h"
#include "duet/kernels/cuda/nn_launchers.h"

namespace duet::cuda {
namespace {

// Nothing to multiply (no images, channels, filters, input pixels (all padding) or output
// pixels): every gradient or output is zero. Handled here so neither library sees a zero-sized
// GEMM or tensor descriptor (a cuDNN error on a 0 dimension would throw, not fall back).
bool is_empty_product(const ConvLayout& g) {
  return g.batch == 0 || g.patch_size() == 0 || g.filters == 0 || g.image_size() == 0 || g.out_pixels() == 0;
}

// Writes `result` of one direction: zeros for an empty product, else cudnn() (which says whether
// cuDNN ran), else im2col() when DUET_CONV_IM2COL=1 or cuDNN declined.
template <class Cudnn, class Im2col>
void run_direction(const ConvLayout& g, const Tensor& result, cudaStream_t stream, Cudnn&& cudnn, Im2col&& im2col) {
  if (is_empty_product(g)) launch_fill(result, 0.0, stream);
  else if (kernels::conv_im2col_requested() || !ran_in_cudnn(cudnn())) im2col();
}

}  // namespace

void launch_conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                           const kernels::Conv2dGeometry& geometry, const Tensor& out, Device device,
                           cudaStream_t stream) {
  if (out.numel() == 0) return;
  const ConvLayout g = ConvLayout::of(x, weight, out, geometry);
  run_direction(
      g, out, stream, [&] { return cudnn_conv2d_forward(g, x, weight, out, device); },
      [&] { im2col_conv2d_forward(g, x, weight, out, device, stream); });
  if (bias.defined()) add_channel_bias(out, bias, stream);
}

void launch_conv2d_backward_input(const Tensor& grad_out, const Tensor& weight, const kernels::Conv2dGeometry& geometry,
                                  const Tensor& grad_x, Device device, cudaStream_t stream) {
  if (grad_x.numel() == 0) return;
  const ConvLayout g = ConvLayout::of(grad_x, weight, grad_out, geometry);
  run_direction(
      g, grad_x, stream, [&] { return cudnn_conv2d_backward_input(g, grad_out, weight, grad_x, device); },
      [&] { im2col_conv2d_backward_input(g, grad_out, weight, grad_x, device, stream); });
}

void launch_conv2d_backward_weight(const Tensor& grad_out, const Tensor& x, const kernels::Conv2dGeometry& geometry,
                                   const Tensor& grad_weight, Device device, cudaStream_t stream) {
  if (grad_weight.numel() == 0) return;
  const ConvLayout g = ConvLayout::of(x, grad_weight, grad_out, geometry);
  run_direction(
      g, grad_weight, stream, [&] { return cudnn_conv2d_backward_weight(g, grad_out, x, grad_weight, device); },
      [&] { im2col_conv2d_backward_weight(g, grad_out, x, grad_weight, device, stream); });
}

}  // namespace duet::cuda
