// The fused convolution and pooling as the separate kernels: see conv2d_pool_composed.h.
#include "duet/kernels/conv2d_pool_composed.h"

#include "duet/kernels/kernels.h"

namespace duet::kernels {
namespace {

// The convolution's output, computed into a temporary.
Tensor convolve(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dGeometry& conv) {
  const PerAxis size = conv2d_output_size(conv, {x.size(2), x.size(3)}, {weight.size(2), weight.size(3)});
  Tensor out = empty_contiguous({x.size(0), weight.size(0), size.h, size.w}, x.dtype(), x.device());
  conv2d_forward(x, weight, bias, conv, out);
  return out;
}

}  // namespace

void composed_conv2d_avg_pool2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                        const Conv2dGeometry& conv, std::optional<UnaryOp> activation,
                                        const Pool2dGeometry& pool, const Tensor& out) {
  avg_pool2d_forward(convolve(x, weight, bias, conv), pool, activation, out);
}

void composed_conv2d_avg_pool2d_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                                         const Tensor& bias, const Conv2dGeometry& conv,
                                         std::optional<UnaryOp> activation, const Pool2dGeometry& pool,
                                         const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias) {
  // Without an activation the pooling's gradient does not read the convolution's output.
  const Tensor conv_out = activation ? convolve(x, weight, bias, conv) : Tensor();
  const PerAxis size = conv2d_output_size(conv, {x.size(2), x.size(3)}, {weight.size(2), weight.size(3)});
  Tensor grad_conv = empty_contiguous({x.size(0), weight.size(0), size.h, size.w}, x.dtype(), x.device());
  avg_pool2d_backward(grad_out, conv_out, pool, activation, grad_conv);
  if (grad_x.defined()) conv2d_backward_input(grad_conv, weight, conv, grad_x);
  if (grad_weight.defined()) {
    conv2d_backward_weight(grad_conv, x, conv, grad_weight, grad_bias);
  } else if (grad_bias.defined()) {
    reduce(ReduceOp::sum, grad_conv, {0, 2, 3}, grad_bias.view({1, grad_bias.size(0), 1, 1}));
  }
}

}  // namespace duet::kernels
