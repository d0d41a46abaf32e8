#include "duet/nn/init.h"

#include <cmath>

#include "duet/autograd/factory.h"
#include "duet/autograd/grad_mode.h"
#include "duet/autograd/ops.h"

namespace duet::nn::init {

Fans fans(const Tensor& weight) {
  DUET_CHECK(weight.dim() >= 2, "init: fan_in and fan_out need a weight with at least 2 dims, got ", weight.describe());
  int64_t receptive = weight.numel() / (weight.size(0) * weight.size(1));
  return {weight.size(1) * receptive, weight.size(0) * receptive};
}

const Tensor& uniform_(const Tensor& t, double low, double high, Generator* generator) {
  NoGradGuard no_grad;
  Tensor draw = rand(t.sizes(), {.dtype = t.dtype(), .device = t.device()}, generator);
  return t.copy_(draw * (high - low) + low);
}

const Tensor& normal_(const Tensor& t, double mean, double stddev, Generator* generator) {
  NoGradGuard no_grad;
  Tensor draw = randn(t.sizes(), {.dtype = t.dtype(), .device = t.device()}, generator);
  return t.copy_(draw * stddev + mean);
}

const Tensor& constant_(const Tensor& t, double value) {
  NoGradGuard no_grad;
  return t.fill_(value);
}

const Tensor& xavier_uniform_(const Tensor& t, double gain, Generator* generator) {
  Fans f = fans(t);
  double bound = gain * std::sqrt(6.0 / static_cast<double>(f.in + f.out));
  return uniform_(t, -bound, bound, generator);
}

const Tensor& kaiming_normal_(const Tensor& t, bool fan_out, Generator* generator) {
  Fans f = fans(t);
  return normal_(t, 0.0, std::sqrt(2.0 / static_cast<double>(fan_out ? f.out : f.in)), generator);
}

}  // namespace duet::nn::init
