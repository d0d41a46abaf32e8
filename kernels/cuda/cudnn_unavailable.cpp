// The cuDNN paths in a CUDA build without cuDNN (DUET_CUDNN=OFF, or AUTO where it was not found),
// compiled instead of conv2d_cudnn.cpp, batch_norm_cudnn.cpp and cudnn_handle.cpp: every call
// declines, so convolution runs through im2col + cuBLAS and batch norm on duet's own kernels.
// Nothing is counted as declined: there was no cuDNN to decline.
#include "duet/kernels/cuda/conv2d.h"
#include "duet/kernels/cuda/nn_launchers.h"
#include "duet/kernels/cuda/runtime.h"

namespace duet::cuda {

bool cudnn_is_built() noexcept { return false; }
int64_t cudnn_declined() noexcept { return 0; }
bool ran_in_cudnn(bool ran) { return ran; }

bool cudnn_conv2d_forward(const ConvLayout&, const Tensor&, const Tensor&, const Tensor&, Device) { return false; }
bool cudnn_conv2d_backward_input(const ConvLayout&, const Tensor&, const Tensor&, const Tensor&, Device) {
  return false;
}
bool cudnn_conv2d_backward_weight(const ConvLayout&, const Tensor&, const Tensor&, const Tensor&, Device) {
  return false;
}

bool cudnn_batch_norm_forward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, bool, double,
                              double, const Tensor&, const Tensor&, const Tensor&, Device, cudaStream_t) {
  return false;
}
bool cudnn_batch_norm_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, bool,
                               const Tensor&, const Tensor&, const Tensor&, Device, cudaStream_t) {
  return false;
}

}  // namespace duet::cuda
