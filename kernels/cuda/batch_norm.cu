// duet's own batch norm kernels, the fallback of the cuDNN path (batch_norm_cudnn.cpp): they run
// under DUET_BATCH_NORM_KERNELS=duet, for backward with training = false (which cuDNN's backward
// does not compute), for every case cuDNN declines, and in a build without cuDNN. The formulas
// are the CPU's (kernels/cpu/batch_norm.cpp): a two-pass variance, the running statistics updated
// with the unbiased variance, out = x * scale + shift.
//
// Each channel is split into `parts` slices, one block each, so that a layer of few channels
// still fills the GPU (one block per channel left most SMs idle). A pass of blocks writes each
// slice's sums (in double); the next pass's blocks combine their channel's sums in slice order,
// so the statistics are the same run after run, then go on: the training forward sums x, then
// (x - mean)^2, then normalises; the backward sums g and g * (x - mean), then differentiates.
// The first slice's block writes the channel's outputs (statistics, running statistics,
// gradients of weight and bias).
//
// x is seen as [N, C, S] (ChannelLayout, kernels/nn_layouts.h); channel c holds N runs of S elements.
#include <algorithm>
#include <cmath>

#include "duet/kernels/cuda/block_reduce.cuh"
#include "duet/kernels/cuda/check.h"
#include "duet/kernels/cuda/nn_launchers.h"
#include "duet/kernels/nn_layouts.h"

namespace duet::cuda {
namespace {

using kernels::ChannelLayout;
using kernels::data_or_null;

// A channel's slices: block b works on channel b / parts, slice b % parts, whose values are
// j = slice * blockDim.x + threadIdx.x, then every parts * blockDim.x further.
struct Slices {
  ChannelLayout l;
  int64_t parts;
  __device__ int64_t channel() const { return static_cast<int64_t>(blockIdx.x) / parts; }
  __device__ int64_t slice() const { return static_cast<int64_t>(blockIdx.x) % parts; }
};

// The sum over this block's slice of term(offset), in double, known to every thread.
template <class Term> __device__ double slice_sum(const Slices& s, Term term) {
  const int64_t c = s.channel();
  double sum = 0;
  for (int64_t j = s.slice() * blockDim.x + threadIdx.x; j < s.l.count(); j += s.parts * blockDim.x)
    sum += term(s.l.offset(c, j));
  return block_reduce(sum, SumOf<double>{});
}

// Channel c's slice sums combined in slice order (the same order in every block), known to
// every thread.
__device__ double combined(const double* sums, const Slices& s) {
  __shared__ double total;
  if (threadIdx.x == 0) {
    double t = 0;
    const double* first = sums + s.channel() * s.parts;
    for (int64_t p = 0; p < s.parts; ++p) t += first[p];
    total = t;
  }
  __syncthreads();
  const double out = total;
  __syncthreads();  // `total` is free again for the caller's next combined()
  return out;
}

// Calls fn(offset) for every value of this block's slice.
template <class Fn> __device__ void for_slice(const Slices& s, Fn fn) {
  const int64_t c = s.channel();
  for (int64_t j = s.slice() * blockDim.x + threadIdx.x; j < s.l.count(); j += s.parts * blockDim.x)
    fn(s.l.offset(c, j));
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
  Slices s;
  double* sum_x;         // [channels * parts], training only
  double* sum_centered;  // [channels * parts], training only
};

template <class T> __global__ void sum_x_kernel(ForwardArgs<T> a) {
  const double sum = slice_sum(a.s, [&](int64_t i) { return static_cast<double>(a.x[i]); });
  if (threadIdx.x == 0) a.sum_x[blockIdx.x] = sum;
}

// Two passes: no cancellation as in E[x^2] - E[x]^2.
template <class T> __global__ void sum_centered_kernel(ForwardArgs<T> a) {
  const T m = static_cast<T>(combined(a.sum_x, a.s) / static_cast<double>(a.s.l.count()));
  const double sum = slice_sum(a.s, [&](int64_t i) { return static_cast<double>((a.x[i] - m) * (a.x[i] - m)); });
  if (threadIdx.x == 0) a.sum_centered[blockIdx.x] = sum;
}

template <class T> __global__ void normalize_kernel(ForwardArgs<T> a) {
  const int64_t c = a.s.channel();
  const double count = static_cast<double>(a.s.l.count());
  const bool first_slice = a.s.slice() == 0;
  double mean, var;
  if (a.training) {
    mean = combined(a.sum_x, a.s) / count;
    var = combined(a.sum_centered, a.s) / count;
    if (first_slice && threadIdx.x == 0 && a.running_mean && a.running_var) {
      a.running_mean[c] = static_cast<T>((1 - a.momentum) * a.running_mean[c] + a.momentum * mean);
      a.running_var[c] = static_cast<T>((1 - a.momentum) * a.running_var[c] + a.momentum * var * count / (count - 1));
    }
  } else {
    mean = a.running_mean[c];
    var = a.running_var[c];
  }
  const double invstd = invstd_of(var, a.eps);
  if (first_slice && threadIdx.x == 0) {
    a.save_mean[c] = static_cast<T>(mean);
    a.save_invstd[c] = static_cast<T>(invstd);
  }
  const double scale = invstd * (a.weight ? static_cast<double>(a.weight[c]) : 1.0);
  const T shift = static_cast<T>((a.bias ? static_cast<double>(a.bias[c]) : 0.0) - mean * scale);
  const T scale_t = static_cast<T>(scale);
  for_slice(a.s, [&](int64_t i) { a.out[i] = a.x[i] * scale_t + shift; });
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
  Slices s;
  double* sum_g;           // [channels * parts]
  double* sum_g_centered;  // [channels * parts]
};

template <class T> __global__ void sum_grad_kernel(BackwardArgs<T> a) {
  const T m = a.save_mean[a.s.channel()];
  const double g = slice_sum(a.s, [&](int64_t i) { return static_cast<double>(a.grad_out[i]); });
  const double gc = slice_sum(a.s, [&](int64_t i) { return static_cast<double>(a.grad_out[i] * (a.x[i] - m)); });
  if (threadIdx.x == 0) {
    a.sum_g[blockIdx.x] = g;
    a.sum_g_centered[blockIdx.x] = gc;
  }
}

template <class T> __global__ void backward_kernel(BackwardArgs<T> a) {
  const int64_t c = a.s.channel();
  const double count = static_cast<double>(a.s.l.count());
  const double mean = a.save_mean[c], invstd = a.save_invstd[c];
  const double sum_g = combined(a.sum_g, a.s);
  const double sum_g_xhat = combined(a.sum_g_centered, a.s) * invstd;
  if (a.s.slice() == 0 && threadIdx.x == 0) {
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
  for_slice(a.s, [&](int64_t i) { a.grad_x[i] = a_t * a.grad_out[i] + b_t * a.x[i] + k_t; });
}

// Inference: save_mean = running_mean, save_invstd = 1 / sqrt(running_var + eps), one thread a channel.
template <class T> __global__ void inference_stats_kernel(const T* running_mean, const T* running_var, double eps,
                                                          T* save_mean, T* save_invstd, int64_t channels) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= channels) return;
  save_mean[c] = running_mean[c];
  save_invstd[c] = static_cast<T>(invstd_of(running_var[c], eps));
}

// About this many blocks over all channels, whatever the GPU (so the sums' order, and with it
// the result, depends on the shapes only), and at most one slice per block of values.
constexpr int64_t kTargetBlocks = 1024;

// x's layout split into slices, checked against the grid's limit of 2^31 - 1 blocks.
Slices slices_of(const char* op, const Tensor& x) {
  const ChannelLayout l = ChannelLayout::of(x);
  const int64_t threads = reduce_threads_for(l.count());
  const int64_t most = std::max<int64_t>(1, (l.count() + threads - 1) / threads);
  const int64_t parts = l.channels == 0 ? 1 : std::clamp<int64_t>(kTargetBlocks / l.channels, 1, most);
  DUET_CHECK(l.channels * parts <= (int64_t(1) << 31) - 1, op, ": too many channels for one grid: ", x.describe());
  return {l, parts};
}

// One block per slice of every channel.
template <class Kernel, class Args> void launch_slices(Kernel kernel, const Args& args, cudaStream_t stream) {
  const Slices& s = args.s;
  kernel<<<static_cast<unsigned>(s.l.channels * s.parts), reduce_threads_for(s.l.count()), 0, stream>>>(args);
  DUET_CUDA_CHECK_LAUNCH();
}

// Scratch for two arrays of per-slice sums. Freed on return; the caching allocator reuses it only
// on this stream, after the kernels that use it.
Tensor slice_sums(const Slices& s, Device device) {
  return empty_contiguous({2 * s.l.channels * s.parts}, DType::f64, device);
}

}  // namespace

void launch_batch_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                               const Tensor& running_var, bool training, double momentum, double eps, const Tensor& out,
                               const Tensor& save_mean, const Tensor& save_invstd, cudaStream_t stream) {
  const Slices s = slices_of("batch_norm_forward", x);
  if (s.l.channels == 0) return;
  const Tensor sums = training ? slice_sums(s, x.device()) : Tensor();
  double* sum_x = training ? sums.data<double>() : nullptr;
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
                              s,
                              sum_x,
                              training ? sum_x + s.l.channels * s.parts : nullptr};
    if (training) {
      launch_slices(sum_x_kernel<T>, args, stream);
      launch_slices(sum_centered_kernel<T>, args, stream);
    }
    launch_slices(normalize_kernel<T>, args, stream);
  });
}

void launch_batch_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight, const Tensor& save_mean,
                                const Tensor& save_invstd, bool training, const Tensor& grad_x,
                                const Tensor& grad_weight, const Tensor& grad_bias, cudaStream_t stream) {
  const Slices s = slices_of("batch_norm_backward", x);
  if (s.l.channels == 0) return;
  const Tensor sums = slice_sums(s, x.device());
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
                               s,
                               sums.data<double>(),
                               sums.data<double>() + s.l.channels * s.parts};
    launch_slices(sum_grad_kernel<T>, args, stream);
    launch_slices(backward_kernel<T>, args, stream);
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
