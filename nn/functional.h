// nn::functional: the stateless twins of the layers (like torch.nn.functional). Each is a
// differentiable op; the layers in nn/layers.h hold parameters and call these.
#pragma once

#include <cstdint>

#include "duet/core/generator.h"
#include "duet/core/tensor.h"

namespace duet::nn::functional {

// x [N, in] (or [..., in]) @ weight[out, in]^T + bias[out].
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

struct Conv2dParams {
  int64_t stride = 1;
  int64_t padding = 0;
};
// x [N, C, H, W], weight [K, C, kh, kw], bias [K] or undefined -> [N, K, H', W'].
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), Conv2dParams params = {});

struct Pool2dParams {
  int64_t kernel = 2;
  int64_t stride = 0;  // 0: same as kernel
  int64_t padding = 0;
};
Tensor max_pool2d(const Tensor& x, Pool2dParams params);
// Padding counts as zeros in the average (count_include_pad=True, PyTorch's default).
Tensor avg_pool2d(const Tensor& x, Pool2dParams params);
// Averages each of output_size x output_size regions, as torch's adaptive_avg_pool2d.
Tensor adaptive_avg_pool2d(const Tensor& x, int64_t output_size);

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
// Fused log-softmax + negative log-likelihood. logits [N, C], target i64 [N] in [0, C).
Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction reduction = Reduction::mean);
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::mean);

}  // namespace duet::nn::functional
