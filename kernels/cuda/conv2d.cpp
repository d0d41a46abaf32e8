// conv2d on CUDA: checks the geometry as the CPU does, then runs cuDNN, or the im2col + cuBLAS
// path when DUET_CONV_IM2COL=1 is set or cuDNN declines the case (conv2d.h).
#include <cstdlib>
#include <cstring>

#include "duet/kernels/cuda/conv2d.h"
#include "duet/kernels/cuda/cudnn_handle.h"
#include "duet/kernels/cuda/launchers.h"
#include "duet/kernels/cuda/nn_checks.h"
#include "duet/kernels/cuda/nn_launchers.h"
#include "duet/kernels/nn_kernels.h"

namespace duet::cuda {
namespace {

// Read at every call (a getenv costs nothing next to a convolution), so a test can compare
// both paths in one process.
bool im2col_requested() {
  const char* value = std::getenv("DUET_CONV_IM2COL");
  return value && std::strcmp(value, "1") == 0;
}

ConvGeometry checked_geometry(const char* op, const Tensor& x, const Tensor& weight, const Tensor& out,
                              int64_t stride, int64_t padding) {
  DUET_CHECK(x.dim() == 4 && weight.dim() == 4 && out.dim() == 4 && x.size(0) == out.size(0) &&
                 x.size(1) == weight.size(1) && out.size(1) == weight.size(0) && stride >= 1 && padding >= 0 &&
                 out.size(2) == kernels::window_output_size(x.size(2), weight.size(2), stride, padding) &&
                 out.size(3) == kernels::window_output_size(x.size(3), weight.size(3), stride, padding),
             op, ": shapes do not match: input ", x.describe(), ", weight ", weight.describe(), ", output ",
             out.describe(), ", stride ", stride, ", padding ", padding);
  return {x.size(0),      x.size(1), x.size(2), x.size(3), weight.size(0), weight.size(2), weight.size(3),
          stride,         padding,   out.size(2), out.size(3)};
}

// Nothing to multiply (no images, channels, filters, input pixels (all padding) or output
// pixels): every gradient or output is zero. Handled here so neither library sees a zero-sized
// GEMM or tensor descriptor (a cuDNN error on a 0 dimension would throw, not fall back).
bool is_empty_product(const ConvGeometry& g) {
  return g.batch == 0 || g.patch_size() == 0 || g.filters == 0 || g.image_size() == 0 || g.out_pixels() == 0;
}

}  // namespace

void launch_conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                           const kernels::Conv2dGeometry& geometry, const Tensor& out, Device device,
                           cudaStream_t stream) {
  const char* op = "conv2d_forward";
  check_nn_operands(op, {x, weight, bias, out});
  const ConvGeometry g = checked_geometry(op, x, weight, out, geometry.stride, geometry.padding);
  DUET_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == g.filters), op, ": bias ",
             bias.defined() ? bias.describe() : "", " does not match the weight ", weight.describe());
  if (out.numel() == 0) return;
  if (is_empty_product(g)) launch_fill(out, 0.0, stream);
  else if (im2col_requested() || !ran_in_cudnn(cudnn_conv2d_forward(g, x, weight, out, device)))
    im2col_conv2d_forward(g, x, weight, out, device, stream);
  if (bias.defined()) add_channel_bias(out, bias, stream);
}

void launch_conv2d_backward_input(const Tensor& grad_out, const Tensor& weight, const kernels::Conv2dGeometry& geometry,
                                  const Tensor& grad_x, Device device, cudaStream_t stream) {
  const char* op = "conv2d_backward_input";
  check_nn_operands(op, {grad_out, weight, grad_x});
  const ConvGeometry g = checked_geometry(op, grad_x, weight, grad_out, geometry.stride, geometry.padding);
  if (grad_x.numel() == 0) return;
  if (is_empty_product(g)) launch_fill(grad_x, 0.0, stream);
  else if (im2col_requested() || !ran_in_cudnn(cudnn_conv2d_backward_input(g, grad_out, weight, grad_x, device)))
    im2col_conv2d_backward_input(g, grad_out, weight, grad_x, device, stream);
}

void launch_conv2d_backward_weight(const Tensor& grad_out, const Tensor& x, const kernels::Conv2dGeometry& geometry,
                                   const Tensor& grad_weight, Device device, cudaStream_t stream) {
  const char* op = "conv2d_backward_weight";
  check_nn_operands(op, {grad_out, x, grad_weight});
  const ConvGeometry g = checked_geometry(op, x, grad_weight, grad_out, geometry.stride, geometry.padding);
  if (grad_weight.numel() == 0) return;
  if (is_empty_product(g)) launch_fill(grad_weight, 0.0, stream);
  else if (im2col_requested() || !ran_in_cudnn(cudnn_conv2d_backward_weight(g, grad_out, x, grad_weight, device)))
    im2col_conv2d_backward_weight(g, grad_out, x, grad_weight, device, stream);
}

}  // namespace duet::cuda
