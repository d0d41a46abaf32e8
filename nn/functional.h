// nn::functional: the stateless twins of the layers (like torch.nn.functional). Each is a
// differentiable op; the layers in nn/layers.h hold parameters and call these.
#pragma once

#include <cstdint>
#include <optional>

#include "duet/core/generator.h"
#include "duet/core/per_axis.h"
#include "duet/core/tensor.h"
#include "duet/kernels/kernels.h"

namespace duet::nn::functional {

// x [N, in] (or [..., in]) @ weight[out, in]^T + bias[out].
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

// PyTorch's Conv2d arguments; each PerAxis takes one value for both axes or {h, w}. groups splits
// the C input channels and the K filters into groups convolved independently (groups == C:
// depthwise). Padding is a number of zeros per side; PyTorch's padding='same'/'valid' strings and
// padding_mode are not offered (docs/conv-and-pooling.md).
struct Conv2dParams {
  PerAxis stride = 1;
  PerAxis padding = 0;
  PerAxis dilation = 1;
  int64_t groups = 1;
};
// x [N, C, H, W], weight [K, C / groups, kh, kw], bias [K] or undefined -> [N, K, H', W'].
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), Conv2dParams params = {});

// PyTorch's pooling arguments (kernel_size, stride, padding, ceil_mode, count_include_pad,
// dilation, divisor_override). ceil_mode rounds the output size up; a window must still start
// inside the input or its left padding, as in PyTorch.
struct Pool2dParams {
  PerAxis kernel = 2;
  PerAxis stride = 0;  // 0: the kernel's size (per axis)
  PerAxis padding = 0;
  bool ceil_mode = false;
  // avg_pool2d only: the padding counts as zeros in the average (PyTorch's default); false
  // divides by the input elements in the window. max_pool2d refuses false.
  bool count_include_pad = true;
  // max_pool2d only: the window's taps lie `dilation` apart, spanning dilation * (kernel - 1) + 1
  // elements. A window whose taps all fall in the padding is refused (PyTorch reads outside the
  // input there). avg_pool2d refuses a dilation other than 1, as PyTorch's has none.
  PerAxis dilation = 1;
  // avg_pool2d only: every window's sum is divided by this instead (PyTorch's divisor_override;
  // 0: none, PyTorch's None, since PyTorch refuses 0). max_pool2d refuses one.
  int64_t divisor_override = 0;
};
Tensor max_pool2d(const Tensor& x, Pool2dParams params);
Tensor avg_pool2d(const Tensor& x, Pool2dParams params);
// PyTorch's positional form, as the layers' constructors take it: max_pool2d(x, 2) is
// max_pool2d(x, {.kernel = 2}), the stride (0: the kernel's) and padding following. A window of
// two sizes alone is spelled PerAxis{3, 2} or {.kernel = {3, 2}}: a bare {3, 2} would fit both.
Tensor max_pool2d(const Tensor& x, PerAxis kernel_size, PerAxis stride = 0, PerAxis padding = 0);
Tensor avg_pool2d(const Tensor& x, PerAxis kernel_size, PerAxis stride = 0, PerAxis padding = 0);
// avg_pool2d(activation(x)) (relu, sigmoid or tanh; none: plain avg_pool2d) without storing
// activation(x): one pass over x forward, and one backward, which reads x again instead of the
// activation's output. Equal to the two ops in sequence, to the bit for relu (the same sums in
// the same order). nn::Sequential runs an activation followed by AvgPool2d this way.
Tensor activated_avg_pool2d(const Tensor& x, std::optional<kernels::UnaryOp> activation, Pool2dParams params);
// avg_pool2d(activation(conv2d(x, weight, bias))) as one op that never stores the convolution's
// output: the backward computes it again from x, weight and bias (kernels::conv2d_avg_pool2d_*).
// On the CPU, where its direct kernels can compute the convolution (stride 1, no dilation, one
// group), it runs image by image, the convolution's output kept in cache; its results are those
// of the three ops in turn up to rounding. nn::Sequential runs Conv2d, ReLU / Sigmoid / Tanh and
// AvgPool2d this way where the convolution is cheap to compute again (nn/layers.h says when).
// Where PyTorch differs: it has no such op; the three ops give the same values and gradients.
Tensor conv2d_activated_avg_pool2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Conv2dParams conv,
                                   std::optional<kernels::UnaryOp> activation, Pool2dParams pool);
// Averages (or takes the max of) each of output_size.h x output_size.w regions, as torch's
// adaptive_avg_pool2d (adaptive_max_pool2d, whose gradient goes to each region's maximum).
Tensor adaptive_avg_pool2d(const Tensor& x, PerAxis output_size);
Tensor adaptive_max_pool2d(const Tensor& x, PerAxis output_size);

// Batch statistics in training (updating running_mean/var in place with `momentum`, using
// the unbiased variance, as PyTorch), running statistics otherwise. x [N, C, H, W] or [N, C].
Tensor batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                  const Tensor& running_var, bool training, double momentum = 0.1, double eps = 1e-5);

// Zeroes each element with probability p and scales the rest by 1/(1-p); identity when not
// training. Masks come from Philox, so they are the same on every device for the same seed.
Tensor dropout(const Tensor& x, double p, bool training, Generator* generator = nullptr);

Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);

enum class Reduction { mean, sum, none };
// torch.nn.functional.cross_entropy's options, with its defaults.
struct CrossEntropyOptions {
  Tensor weight;                // [C]: each class's weight (not trained: no gradient); undefined: all 1
  int64_t ignore_index = -100;  // rows with this target lose 0 and leave the mean's divisor
  Reduction reduction = Reduction::mean;
  double label_smoothing = 0;  // in [0, 1]: the target becomes (1 - s) * one_hot + s / C
};
// Fused log-softmax + negative log-likelihood over the classes, dim 1 of logits [N, C] or
// [N, C, d1, ...] (or dim 0 of one sample's [C]); target i64 of logits' shape without dim 1, each
// a class in [0, C) or ignore_index. Per row (PyTorch 1.13's formula, smoothing weighted too):
//   loss = (1 - s) * w[t] * -log_softmax[t] + (s / C) * sum_c w[c] * -log_softmax[c]
// Reduction::none returns the target-shaped losses; mean divides their sum by the sum of w[t] over
// the rows not ignored (PyTorch's weighted mean; NaN when every row is ignored), as PyTorch does.
Tensor cross_entropy(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& options);
Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction reduction = Reduction::mean);
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::mean);

}  // namespace duet::nn::functional
