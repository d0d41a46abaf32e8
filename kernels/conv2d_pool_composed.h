// kernels::conv2d_avg_pool2d_forward/backward (nn_kernels.h) as the separate kernels, the
// convolution's output in a temporary on the operands' device: the CUDA backend's entries, and
// the CPU's for the convolutions that its direct kernels cannot compute (strided, dilated,
// grouped).
#pragma once

#include "duet/kernels/nn_kernels.h"

namespace duet::kernels {

void composed_conv2d_avg_pool2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                        const Conv2dGeometry& conv, std::optional<UnaryOp> activation,
                                        const Pool2dGeometry& pool, const Tensor& out);
void composed_conv2d_avg_pool2d_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                                         const Tensor& bias, const Conv2dGeometry& conv,
                                         std::optional<UnaryOp> activation, const Pool2dGeometry& pool,
                                         const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias);

}  // namespace duet::kernels
