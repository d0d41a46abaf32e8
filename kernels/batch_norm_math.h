// Batch norm's arithmetic, written once for every path that computes it: the CPU kernel
// (kernels/cpu/batch_norm.cpp), duet's CUDA kernel (kernels/cuda/batch_norm.cu) and
// SyncBatchNorm (parallel/sync_batch_norm.cpp), which adds its per-channel sums over the ranks
// between the steps below. Given the same sums, the three give the same bits, so SyncBatchNorm
// on one global batch differs from BatchNorm2d on it only in the order the sums were added.
//
// Per channel, every term is taken and summed in double, from the tensors' values:
//   forward   mean = sum(x) / count, then var = sum((x - mean)^2) / count (two passes: no
//             cancellation as in E[x^2] - E[x]^2), invstd = 1 / sqrt(var + eps), and
//             out = x * scale + shift (scale and shift below, each rounded to T once);
//             save_mean and save_invstd are mean and invstd rounded to T.
//   backward  sum(g) and sum(g * (x - mean)), mean the saved one, then
//             grad_x = a * g + b * x + k (a, b and k below, rounded to T),
//             grad_bias = sum(g), grad_weight = sum(g * (x - mean)) * invstd.
// The elementwise passes round each product and sum in T, as separate tensor ops do: the files
// that run them are built without contraction into fma (CMakeLists.txt).
#pragma once

#include <cmath>

#include "duet/core/macros.h"

namespace duet::kernels::batch_norm_math {

DUET_HD inline double invstd(double var, double eps) { return 1 / std::sqrt(var + eps); }

// PyTorch's update of a running statistic; the variance's batch value is the unbiased one.
DUET_HD inline double running(double old_value, double batch_value, double momentum) {
  return (1 - momentum) * old_value + momentum * batch_value;
}
DUET_HD inline double unbiased(double var, double count) { return var * count / (count - 1); }

// out = x * scale + shift = (x - mean) * invstd * weight + bias.
struct Affine {
  double scale, shift;
};
DUET_HD inline Affine affine(double mean, double invstd, double weight, double bias) {
  const double scale = invstd * weight;
  return {scale, bias - mean * scale};
}

// grad_x = a * g + b * x + k. With the statistics constant (inference) out is affine in x; in
// training the parts that flow through the batch mean and variance are subtracted:
// scale * (g - mean(g) - xhat * mean(g * xhat)), xhat = (x - mean) * invstd.
struct InputGradient {
  double a, b, k;
};
DUET_HD inline InputGradient input_gradient(double sum_g, double sum_g_centered, double count, double mean,
                                            double invstd, double weight, bool training) {
  const double scale = invstd * weight;
  if (!training) return {scale, 0, 0};
  const double mean_g = sum_g / count, mean_g_xhat = sum_g_centered * invstd / count;
  const double b = -scale * invstd * mean_g_xhat;
  return {scale, b, -scale * mean_g - b * mean};
}

}  // namespace duet::kernels::batch_norm_math
