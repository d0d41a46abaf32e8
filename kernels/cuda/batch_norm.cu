// duet's own batch norm kernels, the fallback of the cuDNN path (batch_norm_cudnn.cpp): they run
// under DUET_BATCH_NORM_KERNELS=duet, for backward with training = false (which cuDNN's backward
// does not compute) and for every case cuDNN declines. The arithmetic is the CPU's
// (kernels/batch_norm_math.h): terms and sums in double, a two-pass variance, the running
// statistics updated with the unbiased variance, out = x * scale + shift.
//
// Each channel's N * H * W values are split into `slices` (parts_per_output, launch_geometry.h),
// one block each, so that a few channels still fill the GPU. With one slice a single kernel sums
// and then normalises, or differentiates, its channel. With several, a first kernel per sum
// writes each slice's partial sum (in double) and the final kernel combines a channel's
// partials before using them, in a fixed order (thread k adds slices k, k + blockDim, ..., then
// block_reduce's tree); every block of the channel combines the same partials the same way, so
// all see the same statistics. No floating-point atomics: the results depend only on the
// shapes, run after run. The sums are the CPU's terms added in another order, so they may
// differ from its in the last bits of the double.
//
// x is seen as [N, C, S] (ChannelLayout, kernels/nn_layouts.h); channel c holds N runs of S elements.
#include <cmath>

#include "duet/core/tensor.h"
#include "duet/kernels/batch_norm_math.h"
#include "duet/kernels/cuda/block_reduce.cuh"
#include "duet/kernels/cuda/check.h"
#include "duet/kernels/cuda/nn_launchers.h"
#include "duet/kernels/nn_layouts.h"

namespace duet::cuda {
namespace {

using kernels::ChannelLayout;
using kernels::data_or_null;

// The blocks of one launch: channel c's values j in [begin, end) of its count() go to block
// c * slices + s for s in [0, slices).
struct Slicing {
  ChannelLayout l;
  int64_t slices;

  int64_t blocks() const { return l.channels * slices; }
  __device__ int64_t channel() const { return static_cast<int64_t>(blockIdx.x) / slices; }
  __device__ int64_t slice() const { return static_cast<int64_t>(blockIdx.x) % slices; }
  __device__ bool first_slice() const { return slice() == 0; }
  __device__ int64_t begin() const { return slice_begin(l.count(), slices, slice()); }
  __device__ int64_t end() const { return slice_begin(l.count(), slices, slice() + 1); }
};

// The sum over this block's slice of term(offset), in double, shared by every thread of the block.
template <class Term> __device__ double slice_sum(const Slicing& s, Term term) {
  const int64_t c = s.channel();
  double sum = 0;
  for (int64_t j = s.begin() + threadIdx.x; j < s.end(); j += blockDim.x) sum += term(s.l.offset(c, j));
  return block_reduce(sum, SumOf<double>{});
}

// The sum over this block's channel: over its slice when it is the channel's only one, else
// its partials (one per slice, written by a previous kernel) combined in a fixed order.
template <class Term> __device__ double channel_sum(const Slicing& s, const double* partials, Term term) {
  if (s.slices == 1) return slice_sum(s, term);
  const double* mine = partials + s.channel() * s.slices;
  double sum = 0;
  for (int64_t k = threadIdx.x; k < s.slices; k += blockDim.x) sum += mine[k];
  return block_reduce(sum, SumOf<double>{});
}

namespace bn = kernels::batch_norm_math;

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
  Slicing s;
  double* sums;     // per slice, with several slices in training: sum(x)...
  double* squares;  // ...and sum((x - mean)^2)

  __device__ double x_at(int64_t i) const { return static_cast<double>(x[i]); }
  __device__ double mean_of_channel() const {
    return channel_sum(s, sums, [&](int64_t i) { return x_at(i); }) / static_cast<double>(s.l.count());
  }
  __device__ double square_at(int64_t i, double mean) const {
    const double d = x_at(i) - mean;
    return d * d;
  }
};

// With several slices in training: each slice's sum(x), then each slice's sum((x - mean)^2).
template <class T> __global__ void forward_sums_kernel(ForwardArgs<T> a) {
  const double sum = slice_sum(a.s, [&](int64_t i) { return a.x_at(i); });
  if (threadIdx.x == 0) a.sums[blockIdx.x] = sum;
}
template <class T> __global__ void forward_squares_kernel(ForwardArgs<T> a) {
  const double mean = a.mean_of_channel();
  const double squares = slice_sum(a.s, [&](int64_t i) { return a.square_at(i, mean); });
  if (threadIdx.x == 0) a.squares[blockIdx.x] = squares;
}

// The statistics (from the channel, or from the partials above), then out over this block's slice.
template <class T> __global__ void forward_kernel(ForwardArgs<T> a) {
  const int64_t c = a.s.channel();
  const double count = static_cast<double>(a.s.l.count());
  const bool writer = a.s.first_slice() && threadIdx.x == 0;
  double mean, var;
  if (a.training) {
    mean = a.mean_of_channel();
    var = channel_sum(a.s, a.squares, [&](int64_t i) { return a.square_at(i, mean); }) / count;
    if (writer && a.running_mean && a.running_var) {
      a.running_mean[c] = static_cast<T>(bn::running(a.running_mean[c], mean, a.momentum));
      a.running_var[c] = static_cast<T>(bn::running(a.running_var[c], bn::unbiased(var, count), a.momentum));
    }
  } else {
    mean = a.running_mean[c];
    var = a.running_var[c];
  }
  const double invstd = bn::invstd(var, a.eps);
  if (writer) {
    a.save_mean[c] = static_cast<T>(mean);
    a.save_invstd[c] = static_cast<T>(invstd);
  }
  const bn::Affine affine = bn::affine(mean, invstd, a.weight ? static_cast<double>(a.weight[c]) : 1.0,
                                       a.bias ? static_cast<double>(a.bias[c]) : 0.0);
  const T shift = static_cast<T>(affine.shift), scale_t = static_cast<T>(affine.scale);
  for (int64_t j = a.s.begin() + threadIdx.x; j < a.s.end(); j += blockDim.x) {
    const int64_t i = a.s.l.offset(c, j);
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
  Slicing s;
  double* sums_g;           // per slice, with several slices: sum(g)...
  double* sums_g_centered;  // ...and sum(g * (x - mean))

  __device__ double g_at(int64_t i) const { return static_cast<double>(grad_out[i]); }
  __device__ double g_centered_at(int64_t i, double mean) const {
    return static_cast<double>(grad_out[i]) * (static_cast<double>(x[i]) - mean);
  }
};

// With several slices: each slice's two sums.
template <class T> __global__ void backward_sums_kernel(BackwardArgs<T> a) {
  const double mean = a.save_mean[a.s.channel()];
  const double sum_g = slice_sum(a.s, [&](int64_t i) { return a.g_at(i); });
  const double sum_g_centered = slice_sum(a.s, [&](int64_t i) { return a.g_centered_at(i, mean); });
  if (threadIdx.x == 0) {
    a.sums_g[blockIdx.x] = sum_g;
    a.sums_g_centered[blockIdx.x] = sum_g_centered;
  }
}

// The channel's sums (from the channel, or from the partials above), then grad_x over this
// block's slice.
template <class T> __global__ void backward_kernel(BackwardArgs<T> a) {
  const int64_t c = a.s.channel();
  const double count = static_cast<double>(a.s.l.count());
  const double mean = a.save_mean[c], invstd = a.save_invstd[c];
  const double sum_g = channel_sum(a.s, a.sums_g, [&](int64_t i) { return a.g_at(i); });
  const double sum_g_centered =
      channel_sum(a.s, a.sums_g_centered, [&](int64_t i) { return a.g_centered_at(i, mean); });
  if (a.s.first_slice() && threadIdx.x == 0) {
    if (a.grad_bias) a.grad_bias[c] = static_cast<T>(sum_g);
    if (a.grad_weight) a.grad_weight[c] = static_cast<T>(sum_g_centered * invstd);
  }
  if (!a.grad_x) return;
  const bn::InputGradient coefficients = bn::input_gradient(
      sum_g, sum_g_centered, count, mean, invstd, a.weight ? static_cast<double>(a.weight[c]) : 1.0, a.training);
  const T a_t = static_cast<T>(coefficients.a), b_t = static_cast<T>(coefficients.b);
  const T k_t = static_cast<T>(coefficients.k);
  for (int64_t j = a.s.begin() + threadIdx.x; j < a.s.end(); j += blockDim.x) {
    const int64_t i = a.s.l.offset(c, j);
    a.grad_x[i] = a_t * a.grad_out[i] + b_t * a.x[i] + k_t;
  }
}

// Inference: save_mean = running_mean, save_invstd = 1 / sqrt(running_var + eps), one thread a channel.
template <class T> __global__ void inference_stats_kernel(const T* running_mean, const T* running_var, double eps,
                                                          T* save_mean, T* save_invstd, int64_t channels) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= channels) return;
  save_mean[c] = running_mean[c];
  save_invstd[c] = static_cast<T>(bn::invstd(running_var[c], eps));
}

// x's slicing: grids are limited to 2^31 - 1 blocks, far more than any channel count (a channel
// gets several slices only when there are fewer than 1024 channels).
Slicing slicing_of(const char* op, const Tensor& x) {
  const ChannelLayout l = ChannelLayout::of(x);
  const Slicing s{l, parts_per_output(l.channels, l.count())};
  DUET_CHECK(s.blocks() <= (int64_t(1) << 31) - 1, op, ": too many channels for one grid: ", x.describe());
  return s;
}

// One block per slice.
template <class Kernel, class Args> void launch_slices(Kernel kernel, const Args& args, cudaStream_t stream) {
  const int threads = reduce_threads_for((args.s.l.count() + args.s.slices - 1) / args.s.slices);
  kernel<<<static_cast<unsigned>(args.s.blocks()), threads, 0, stream>>>(args);
  DUET_CUDA_CHECK_LAUNCH();
}

// Room for one double per slice; freed when the launcher returns, which the caching allocator
// reuses only on this same stream, after the kernels that read it.
Tensor partials_for(const Slicing& s, const Tensor& x) {
  return empty_contiguous({s.blocks()}, DType::f64, x.device());
}

}  // namespace

void launch_batch_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                               const Tensor& running_var, bool training, double momentum, double eps, const Tensor& out,
                               const Tensor& save_mean, const Tensor& save_invstd, cudaStream_t stream) {
  const Slicing s = slicing_of("batch_norm_forward", x);
  if (s.l.channels == 0) return;
  const bool partial_sums = training && s.slices > 1;
  const Tensor sums = partial_sums ? partials_for(s, x) : Tensor();
  const Tensor squares = partial_sums ? partials_for(s, x) : Tensor();
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
                              data_or_null<double>(sums),
                              data_or_null<double>(squares)};
    if (partial_sums) {
      launch_slices(forward_sums_kernel<T>, args, stream);
      launch_slices(forward_squares_kernel<T>, args, stream);
    }
    launch_slices(forward_kernel<T>, args, stream);
  });
}

void launch_batch_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight, const Tensor& save_mean,
                                const Tensor& save_invstd, bool training, const Tensor& grad_x,
                                const Tensor& grad_weight, const Tensor& grad_bias, cudaStream_t stream) {
  const Slicing s = slicing_of("batch_norm_backward", x);
  if (s.l.channels == 0) return;
  const bool partial_sums = s.slices > 1;
  const Tensor sums_g = partial_sums ? partials_for(s, x) : Tensor();
  const Tensor sums_g_centered = partial_sums ? partials_for(s, x) : Tensor();
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
                               data_or_null<double>(sums_g),
                               data_or_null<double>(sums_g_centered)};
    if (partial_sums) launch_slices(backward_sums_kernel<T>, args, stream);
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
