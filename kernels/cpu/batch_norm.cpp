// Batch norm on the CPU: direct loops, one channel per task on the pool, with the arithmetic of
// kernels/batch_norm_math.h: every term taken and summed in double, as PyTorch's CPU kernels
// accumulate f32 in double.
//
// x is seen as [N, C, S] (ChannelLayout, kernels/nn_layouts.h); channel c reads N runs of S elements.
#include <algorithm>
#include <cmath>
#include <utility>

#include "duet/kernels/batch_norm_math.h"
#include "duet/kernels/cpu/cpu_backend.h"
#include "duet/kernels/cpu/nn_common.h"
#include "duet/kernels/cpu/thread_pool.h"

namespace duet::kernels::cpu {
namespace {

namespace bn = kernels::batch_norm_math;

// sum of term(i) over i in [0, n), in double, with kLanes independent accumulators: a single
// one would stall every add on the previous one, and the compiler may not reorder floating-point
// sums by itself.
template <class Term> double run_sum(int64_t n, Term&& term) {
  constexpr int64_t kLanes = 8;
  double lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) lanes[l] += term(i + l);
  double total = 0;
  for (double lane : lanes) total += lane;
  for (; i < n; ++i) total += term(i);
  return total;
}

// The sums of g(i) and of g(i) * centered(i) over i in [0, n), in one pass over both operands,
// with run_sum's lanes.
template <class G, class Centered>
std::pair<double, double> run_sum_of_products(int64_t n, G&& g, Centered&& centered) {
  constexpr int64_t kLanes = 8;
  double g_lanes[kLanes] = {}, product_lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) {
      const double gi = g(i + l);
      g_lanes[l] += gi;
      product_lanes[l] += gi * centered(i + l);
    }
  }
  double g_total = 0, product_total = 0;
  for (int64_t l = 0; l < kLanes; ++l) {
    g_total += g_lanes[l];
    product_total += product_lanes[l];
  }
  for (; i < n; ++i) {
    g_total += g(i);
    product_total += g(i) * centered(i);
  }
  return {g_total, product_total};
}

// Runs fn(c) for every channel, in parallel.
template <class Fn> void for_each_channel(const ChannelLayout& l, Fn&& fn) {
  parallel_for(l.channels, grain_for(l.count()), [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) fn(c);
  });
}

template <class T> void forward_typed(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                      const Tensor& running_mean, const Tensor& running_var, bool training,
                                      double momentum, double eps, const Tensor& out, const Tensor& save_mean,
                                      const Tensor& save_invstd, const ChannelLayout& l) {
  const T* xd = x.data<T>();
  const T* wd = data_or_null<T>(weight);
  const T* bd = data_or_null<T>(bias);
  T* rm = data_or_null<T>(running_mean);
  T* rv = data_or_null<T>(running_var);
  T* od = out.data<T>();
  T* mean_out = save_mean.data<T>();
  T* invstd_out = save_invstd.data<T>();
  const double count = static_cast<double>(l.count());
  const int64_t s = l.spatial;
  for_each_channel(l, [&](int64_t c) {
    double mean, var;
    if (training) {
      double sum = 0;
      l.for_each_run(
          c, [&](int64_t at) { sum += run_sum(s, [&](int64_t i) { return static_cast<double>(xd[at + i]); }); });
      mean = sum / count;
      double squares = 0;
      l.for_each_run(c, [&](int64_t at) {
        squares += run_sum(s, [&](int64_t i) {
          const double d = static_cast<double>(xd[at + i]) - mean;
          return d * d;
        });
      });
      var = squares / count;
      if (rm && rv) {
        rm[c] = static_cast<T>(bn::running(rm[c], mean, momentum));
        rv[c] = static_cast<T>(bn::running(rv[c], bn::unbiased(var, count), momentum));
      }
    } else {
      mean = rm[c];
      var = rv[c];
    }
    const double invstd = bn::invstd(var, eps);
    mean_out[c] = static_cast<T>(mean);
    invstd_out[c] = static_cast<T>(invstd);
    const bn::Affine affine = bn::affine(mean, invstd, wd ? wd[c] : 1.0, bd ? bd[c] : 0.0);
    const T scale_t = static_cast<T>(affine.scale), shift = static_cast<T>(affine.shift);
    l.for_each_run(c, [&](int64_t at) {
      for (int64_t i = 0; i < s; ++i) od[at + i] = xd[at + i] * scale_t + shift;
    });
  });
}

template <class T> void backward_typed(const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                                       const Tensor& save_mean, const Tensor& save_invstd, bool training,
                                       const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias,
                                       const ChannelLayout& l) {
  const T* gd = grad_out.data<T>();
  const T* xd = x.data<T>();
  const T* wd = data_or_null<T>(weight);
  const T* mean_in = save_mean.data<T>();
  const T* invstd_in = save_invstd.data<T>();
  T* gxd = data_or_null<T>(grad_x);
  T* gwd = data_or_null<T>(grad_weight);
  T* gbd = data_or_null<T>(grad_bias);
  const double count = static_cast<double>(l.count());
  const int64_t s = l.spatial;
  for_each_channel(l, [&](int64_t c) {
    const double mean = mean_in[c], invstd = invstd_in[c];
    double sum_g = 0, sum_g_centered = 0;  // sum(g) and sum(g * (x - mean))
    l.for_each_run(c, [&](int64_t at) {
      const auto [run_g, run_g_centered] = run_sum_of_products(
          s, [&](int64_t i) { return static_cast<double>(gd[at + i]); },
          [&](int64_t i) { return static_cast<double>(xd[at + i]) - mean; });
      sum_g += run_g;
      sum_g_centered += run_g_centered;
    });
    if (gbd) gbd[c] = static_cast<T>(sum_g);
    if (gwd) gwd[c] = static_cast<T>(sum_g_centered * invstd);
    if (!gxd) return;
    const bn::InputGradient coefficients =
        bn::input_gradient(sum_g, sum_g_centered, count, mean, invstd, wd ? wd[c] : 1.0, training);
    const T a_t = static_cast<T>(coefficients.a), b_t = static_cast<T>(coefficients.b);
    const T k_t = static_cast<T>(coefficients.k);
    l.for_each_run(c, [&](int64_t at) {
      for (int64_t i = 0; i < s; ++i) gxd[at + i] = a_t * gd[at + i] + b_t * xd[at + i] + k_t;
    });
  });
}

}  // namespace

void batch_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                        const Tensor& running_var, bool training, double momentum, double eps, const Tensor& out,
                        const Tensor& save_mean, const Tensor& save_invstd) {
  const ChannelLayout l = ChannelLayout::of(x);
  dispatch_floating(x.dtype(), "batch_norm_forward", [&]<class T>() {
    forward_typed<T>(x, weight, bias, running_mean, running_var, training, momentum, eps, out, save_mean, save_invstd,
                     l);
  });
}

void batch_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight, const Tensor& save_mean,
                         const Tensor& save_invstd, bool training, const Tensor& grad_x, const Tensor& grad_weight,
                         const Tensor& grad_bias) {
  const ChannelLayout l = ChannelLayout::of(x);
  dispatch_floating(x.dtype(), "batch_norm_backward", [&]<class T>() {
    backward_typed<T>(grad_out, x, weight, save_mean, save_invstd, training, grad_x, grad_weight, grad_bias, l);
  });
}

}  // namespace duet::kernels::cpu
