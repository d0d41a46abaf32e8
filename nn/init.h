// Parameter initialisers. Each overwrites `t` in place (under no-grad) with values drawn from
// `generator` (the default one when null), and returns it.
#pragma once

#include "duet/core/generator.h"
#include "duet/core/tensor.h"

namespace duet::nn::init {

// fan_in and fan_out of a weight: [out, in] for Linear, [out, in, kh, kw] for Conv2d.
struct Fans {
  int64_t in;
  int64_t out;
};
Fans fans(const Tensor& weight);

const Tensor& uniform_(const Tensor& t, double low, double high, Generator* generator = nullptr);
const Tensor& normal_(const Tensor& t, double mean, double stddev, Generator* generator = nullptr);
const Tensor& constant_(const Tensor& t, double value);
// U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio, 2010).
const Tensor& xavier_uniform_(const Tensor& t, double gain = 1.0, Generator* generator = nullptr);
// N(0, std^2) with std = sqrt(2 / fan) (He et al., 2015); fan_in by default (mode "fan_in").
const Tensor& kaiming_normal_(const Tensor& t, bool fan_out = false, Generator* generator = nullptr);

}  // namespace duet::nn::init
