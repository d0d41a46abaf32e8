// duet's own batch norm kernels, the fallback of the cuDNN path (batch_norm_cudnn.cpp): they run
// under DUET_BATCH_NORM_KERNELS=duet, for backward with training = false (which cuDNN's backward
// does not compute) and for every case cuDNN declines. One block per channel computes the
// channel's statistics (sums in double, combined in block_reduce's fixed order) and then
// normalises, or differentiates, the channel. The formulas are the CPU's
// (kernels/cpu/batch_norm.cpp): a two-pass variance, the running statistics updated with the
// unbiased variance, out = x * scale + shift.
//
// x is seen as [N, C, S] (ChannelLayout, kernels/nn_layouts.h); channel c holds N runs of S elements.
#include <cmath>

#include "duet/kernels/cuda/block_reduce.cuh"
#include "duet/kernels/cuda/check.h"
#include "duet/kernels/cuda/nn_launchers.h"
#include "duet/kernels/nn_layouts.h"

namespace duet::cuda {
namespace {

using kernels::ChannelLayout;
using kernels::data_or_null;

// The sum over channel c's values of term(offset), in double, shared by every thread of the block.
template <class Term> __device__ double channel_sum(const ChannelLayout& l, int64_t c, Term term) {
  double sum = 0;
  for (int64_t j = threadIdx.x; j < l.count(); j += blockDim.x) sum += term(l.offset(c, j));
  return block_reduce(sum, SumOf<double>{});
}

// save_invstd's definition, in double as on the CPU.
__device__ double invstd_of(double var, double eps) { return 1 / std::sqrt(var + eps); }

template <class T> struct ForwardArgs {
  const T* x;
  const T* weight;  // null: 1
  const T* bias;    // null: 0
  T* running_mean;  // both null: no update
  T* running_var;
  T* out;
  T* save_mean;
  T* save_invstd;
  bool training;
  double momentum, eps;
  ChannelLayout l;
};

template <class T> __global__ void forward_kernel(ForwardArgs<T> a) {
  const int64_t c = blockIdx.x;
  const double count = static_cast<double>(a.l.count());
  double mean, var;
  if (a.training) {
    mean = channel_sum(a.l, c, [&](int64_t i) { return static_cast<double>(a.x[i]); }) / count;
    // Two passes: no cancellation as in E[x^2] - E[x]^2.
    const T m = static_cast<T>(mean);
    var = channel_sum(a.l, c, [&](int64_t i) { return static_cast<double>((a.x[i] - m) * (a.x[i] - m)); }) / count;
    if (threadIdx.x == 0 && a.running_mean && a.running_var) {
      a.running_mean[c] = static_cast<T>((1 - a.momentum) * a.running_mean[c] + a.momentum * mean);
      a.running_var[c] = static_cast<T>((1 - a.momentum) * a.running_var[c] + a.momentum * var * count / (count - 1));
    }
  } else {
    mean = a.running_mean[c];
    var = a.running_var[c];
  }
  const double invstd = invstd_of(var, a.eps);
  if (threadIdx.x == 0) {
    a.save_mean[c] = static_cast<T>(mean);
    a.save_invstd[c] = static_cast<T>(invstd);
  }
  const double scale = invstd * (a.weight ? static_cast<double>(a.weight[c]) : 1.0);
  const T shift = static_cast<T>((a.bias ? static_cast<double>(a.bias[c]) : 0.0) - mean * scale);
  const T scale_t = static_cast<T>(scale);
  for (int64_t j = threadIdx.x; j < a.l.count(); j += blockDim.x) {
    const int64_t i = a.l.offset(c, j);
    a.out[i] = a.x[i] * scale_t + shift;
  }
}

template <class T> struct BackwardArgs {
  const T* grad_out;
  const T* x;
  const T* weight;  // null: 1
  const T* save_mean;
  const T* save_invstd;
  T* grad_x;  // each null: not wanted
  T* grad_weight;
  T* grad_bias;
  bool training;
  ChannelLayout l;
};

template <class T> __global__ void backward_kernel(BackwardArgs<T> a) {
  const int64_t c = blockIdx.x;
  const double count = static_cast<double>(a.l.count());
  const double mean = a.save_mean[c], invstd = a.save_invstd[c];
  const T m = static_cast<T>(mean);
  const double sum_g = channel_sum(a.l, c, [&](int64_t i) { return static_cast<double>(a.grad_out[i]); });
  const double sum_g_centered =
      channel_sum(a.l, c, [&](int64_t i) { return static_cast<double>(a.grad_out[i] * (a.x[i] - m)); });
  const double sum_g_xhat = sum_g_centered * invstd;
  if (threadIdx.x == 0) {
    if (a.grad_bias) a.grad_bias[c] = static_cast<T>(sum_g);
    if (a.grad_weight) a.grad_weight[c] = static_cast<T>(sum_g_xhat);
  }
  if (!a.grad_x) return;
  const double scale = invstd * (a.weight ? static_cast<double>(a.weight[c]) : 1.0);
  // grad_x = a * g + b * x + k. With the statistics constant (inference) out is affine in x;
  // in training the parts that flow through the batch mean and variance are subtracted:
  // scale * (g - mean(g) - xhat * mean(g * xhat)), xhat = (x - mean) * invstd.
  double ca = scale, cb = 0, ck = 0;
  if (a.training) {
    const double mean_g = sum_g / count, mean_g_xhat = sum_g_xhat / count;
    cb = -scale * invstd * mean_g_xhat;
    ck = -scale * mean_g - cb * mean;
  }
  const T a_t = static_cast<T>(ca), b_t = static_cast<T>(cb), k_t = static_cast<T>(ck);
  for (int64_t j = threadIdx.x; j < a.l.count(); j += blockDim.x) {
    const int64_t i = a.l.offset(c, j);
    a.grad_x[i] = a_t * a.grad_out[i] + b_t * a.x[i] + k_t;
  }
}

// Inference: save_mean = running_mean, save_invstd = 1 / sqrt(running_var + eps), one thread a channel.
template <class T> __global__ void inference_stats_kernel(const T* running_mean, const T* running_var, double eps,
                                                          T* save_mean, T* save_invstd, int64_t channels) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= channels) return;
  save_mean[c] = running_mean[c];
  save_invstd[c] = static_cast<T>(invstd_of(running_var[c], eps));
}

// One block per channel.
template <class Kernel, class Args> void launch_per_channel(Kernel kernel, const Args& args, cudaStream_t stream) {
  if (args.l.channels == 0) return;
  kernel<<<static_cast<unsigned>(args.l.channels), reduce_threads_for(args.l.count()), 0, stream>>>(args);
  DUET_CUDA_CHECK_LAUNCH();
}

// x's layout, for one block per channel: grids are limited to 2^31 - 1 blocks, far more than any
// channel count.
ChannelLayout grid_layout(const char* op, const Tensor& x) {
  const ChannelLayout l = ChannelLayout::of(x);
  DUET_CHECK(l.channels <= (int64_t(1) << 31) - 1, op, ": too many channels for one grid: ", x.describe());
  return l;
}

}  // namespace

void launch_batch_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                               const Tensor& running_var, bool training, double momentum, double eps, const Tensor& out,
                               const Tensor& save_mean, const Tensor& save_invstd, cudaStream_t stream) {
  const ChannelLayout l = grid_layout("batch_norm_forward", x);
  dispatch_floating(x.dtype(), "batch_norm_forward", [&]<class T>() {
    const ForwardArgs<T> args{x.data<T>(),
                              data_or_null<T>(weight),
                              data_or_null<T>(bias),
                              data_or_null<T>(running_mean),
                              data_or_null<T>(running_var),
                              out.data<T>(),
                              save_mean.data<T>(),
                              save_invstd.data<T>(),
                              training,
                              momentum,
                              eps,
                              l};
    launch_per_channel(forward_kernel<T>, args, stream);
  });
}

void launch_batch_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight, const Tensor& save_mean,
                                const Tensor& save_invstd, bool training, const Tensor& grad_x,
                                const Tensor& grad_weight, const Tensor& grad_bias, cudaStream_t stream) {
  const ChannelLayout l = grid_layout("batch_norm_backward", x);
  dispatch_floating(x.dtype(), "batch_norm_backward", [&]<class T>() {
    const BackwardArgs<T> args{grad_out.data<T>(),
                               x.data<T>(),
                               data_or_null<T>(weight),
                               save_mean.data<T>(),
                               save_invstd.data<T>(),
                               data_or_null<T>(grad_x),
                               data_or_null<T>(grad_weight),
                               data_or_null<T>(grad_bias),
                               training,
                               l};
    launch_per_channel(backward_kernel<T>, args, stream);
  });
}

void launch_batch_norm_inference_stats(const Tensor& running_mean, const Tensor& running_var, double eps,
                                       const Tensor& save_mean, const Tensor& save_invstd, cudaStream_t stream) {
  const int64_t channels = save_mean.numel();
  if (channels == 0) return;
  constexpr unsigned kThreads = 256;
  const auto blocks = static_cast<unsigned>((channels + kThreads - 1) / kThreads);
  dispatch_floating(save_mean.dtype(), "batch_norm_forward", [&]<class T>() {
    inference_stats_kernel<T><<<blocks, kThreads, 0, stream>>>(running_mean.data<T>(), running_var.data<T>(), eps,
                                                               save_mean.data<T>(), save_invstd.data<T>(), channels);
  });
  DUET_CUDA_CHECK_LAUNCH();
}

}  // namespace duet::cuda
