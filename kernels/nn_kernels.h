// The neural-network kernels: convolution, pooling, batch norm, softmax and cross-entropy.
// Each function checks its operands against the contract below, once for every backend, and
// dispatches once on the device of its output to the entry of the same name in that device
// type's kernel table (kernels/nn_dispatch.cpp, kernels/backend.h). A caller's mistake throws,
// naming the op and each tensor by its parameter's name, instead of reading or writing out of
// bounds in a kernel.
//
// Conventions, shared by every function below:
//   - Every tensor is contiguous, and all floating tensors of one call share a dtype (f32 or
//     f64). Index tensors are i64. The caller (nn/functional*.cpp) checks the user's input
//     (and devices), makes its operands contiguous and allocates every output.
//   - Images are NCHW. Where a window slides over them, its geometry comes as one small struct
//     (Conv2dGeometry, Pool2dGeometry), so that an option added later changes the struct, the op
//     layer and the loops, not every signature of the kernel table.
//   - Outputs are overwritten, never accumulated into.
#pragma once

#include <cstdint>
#include <optional>

#include "duet/core/per_axis.h"
#include "duet/core/tensor.h"
#include "duet/kernels/kernels.h"

namespace duet::kernels {

// The spatial output size of a window of `kernel` taps, `dilation` apart, sliding by `stride`
// over `in` elements with `padding` on both sides: floor((in + 2 * padding - dilation *
// (kernel - 1) - 1) / stride) + 1, or with ceil_mode rounded up, less a last window that would
// start in the right padding (PyTorch's pooling_output_shape). 0 when the window does not fit
// (callers reject that). The guard matters: C++ division truncates toward zero.
constexpr int64_t window_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t padding, int64_t dilation = 1,
                                     bool ceil_mode = false) {
  const int64_t span = in + 2 * padding - dilation * (kernel - 1) - 1;
  if (span < 0) return 0;
  const int64_t out = (span + (ceil_mode ? stride - 1 : 0)) / stride + 1;
  return ceil_mode && (out - 1) * stride >= in + padding ? out - 1 : out;
}

// How conv2d's weight slides over its input, as PyTorch's Conv2d arguments: `stride`, zero
// `padding` on both sides, and the taps of the kh x kw kernel `dilation` apart, per axis. The
// channels split into `groups` independent convolutions: filter k of weight [K, C / groups, kh, kw]
// reads only the C / groups input channels of its group, k / (K / groups) (groups == C is a
// depthwise convolution).
struct Conv2dGeometry {
  PerAxis stride = 1;
  PerAxis padding = 0;
  PerAxis dilation = 1;
  int64_t groups = 1;
};

// A pooling window of kernel.h x kernel.w elements moved by `stride`, over the input with
// `padding` on both sides of each axis (never wins a max; counts as zeros in an average when
// count_include_pad). ceil_mode rounds the output size up (window_output_size), so a last window
// may run past the padded input; as in PyTorch, an average then divides by the part of its window
// that lies within the padded input (count_include_pad) or within the input (not), or by
// divisor_override when that is not 0. Max pooling's taps may lie `dilation` apart (PyTorch's
// max_pool2d dilation); every window must then hold at least one input element.
struct Pool2dGeometry {
  PerAxis kernel = 1;
  PerAxis stride = 1;
  PerAxis padding = 0;
  bool ceil_mode = false;
  bool count_include_pad = true;  // average pooling only
  PerAxis dilation = 1;           // max pooling only
  int64_t divisor_override = 0;   // average pooling only; 0: none (PyTorch's None)
};

// {Ho, Wo} of a convolution of an input of {H, W} with a kernel of {kh, kw}.
constexpr PerAxis conv2d_output_size(const Conv2dGeometry& g, PerAxis in, PerAxis kernel) {
  return {window_output_size(in.h, kernel.h, g.stride.h, g.padding.h, g.dilation.h),
          window_output_size(in.w, kernel.w, g.stride.w, g.padding.w, g.dilation.w)};
}

// {Ho, Wo} of pooling an input of {H, W}.
constexpr PerAxis pool2d_output_size(const Pool2dGeometry& g, PerAxis in) {
  return {window_output_size(in.h, g.kernel.h, g.stride.h, g.padding.h, g.dilation.h, g.ceil_mode),
          window_output_size(in.w, g.kernel.w, g.stride.w, g.padding.w, g.dilation.w, g.ceil_mode)};
}

// ---- conv2d ----
// out [N, K, Ho, Wo] = x [N, C, H, W] (*) weight [K, C / groups, kh, kw] (+ bias [K]; undefined:
// none).
void conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dGeometry& geometry,
                    const Tensor& out);
// grad_x [N, C, H, W] from grad_out [N, K, Ho, Wo]; grad_x's shape gives H and W.
void conv2d_backward_input(const Tensor& grad_out, const Tensor& weight, const Conv2dGeometry& geometry,
                           const Tensor& grad_x);
// grad_weight [K, C / groups, kh, kw] from grad_out and the forward input x; and, when defined,
// grad_bias [K], the sum of grad_out over N, H and W, which the CPU's direct kernels take in the
// same pass over grad_out.
void conv2d_backward_weight(const Tensor& grad_out, const Tensor& x, const Conv2dGeometry& geometry,
                            const Tensor& grad_weight, const Tensor& grad_bias);

// ---- pooling ----
// out and indices [N, C, Ho, Wo]. indices (i64) holds the position of each maximum within its
// input plane, h * W + w (PyTorch's convention). Padding never wins: it acts as -infinity.
// On ties the first maximum in row-major window order wins; of several NaN the last, as in
// PyTorch (whose loops take `val > max || isnan(val)`).
void max_pool2d_forward(const Tensor& x, const Pool2dGeometry& geometry, const Tensor& out, const Tensor& indices);
// grad_x [N, C, H, W] = grad_out summed at the positions in indices, in output order. indices must
// be what the forward wrote with the same window geometry, `window` (none: adaptive_max_pool2d's
// windows), so that each position lies in a window of its output: backends may gather each input's
// gradient from the outputs whose windows cover it (CUDA), instead of scattering (the CPU).
void max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, const std::optional<Pool2dGeometry>& window,
                         const Tensor& grad_x);
// Average over each window, divided as Pool2dGeometry says.
// With an activation (relu, sigmoid or tanh) the average is of activation(x), and the backward,
// given the same x, returns the gradient with respect to x: the activation and the pooling in one
// pass over x each way, activation(x) never stored (nn::functional::activated_avg_pool2d). The
// backward's x is read only with an activation, and may be undefined without one.
void avg_pool2d_forward(const Tensor& x, const Pool2dGeometry& geometry, std::optional<UnaryOp> activation,
                        const Tensor& out);
void avg_pool2d_backward(const Tensor& grad_out, const Tensor& x, const Pool2dGeometry& geometry,
                         std::optional<UnaryOp> activation, const Tensor& grad_x);
// What the profiler, the errors and every backend call those two: avg_pool2d_forward/backward,
// or activated_avg_pool2d_forward/backward with an activation.
const char* avg_pool2d_name(std::optional<UnaryOp> activation, bool backward);

// ---- a convolution, an activation and average pooling in one op ----
// out [N, K, Po, Qo] = avg_pool2d(activation(conv2d(x, weight, bias))), the activation relu,
// sigmoid, tanh or none, the convolution's output [N, K, Ho, Wo] never stored
// (nn::functional::conv2d_activated_avg_pool2d). The backward, from grad_out [N, K, Po, Qo],
// computes the convolution again from x, weight and bias, and fills each of grad_x, grad_weight
// and grad_bias that is defined. The CPU runs the three image by image, the convolution's output
// kept in the thread's cache, where its direct kernels can compute the convolution; elsewhere,
// and on CUDA, this is the separate kernels with the convolution's output in a temporary.
void conv2d_avg_pool2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dGeometry& conv,
                               std::optional<UnaryOp> activation, const Pool2dGeometry& pool, const Tensor& out);
void conv2d_avg_pool2d_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight, const Tensor& bias,
                                const Conv2dGeometry& conv, std::optional<UnaryOp> activation,
                                const Pool2dGeometry& pool, const Tensor& grad_x, const Tensor& grad_weight,
                                const Tensor& grad_bias);

// Adaptive pooling to out's Ho x Wo: output row o covers input rows
// [floor(o * H / Ho), ceil((o + 1) * H / Ho)), and likewise for columns. The max writes indices
// as max_pool2d_forward does, and max_pool2d_backward (with no window) is its backward too.
void adaptive_avg_pool2d_forward(const Tensor& x, const Tensor& out);
void adaptive_avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_x);
void adaptive_max_pool2d_forward(const Tensor& x, const Tensor& out, const Tensor& indices);

// ---- batch norm ----
// x and out are [N, C] or [N, C, H, W]; weight, bias, running_mean, running_var, save_mean and
// save_invstd are [C]. weight and bias may be undefined (taken as 1 and 0).
// training: normalises with the batch mean and biased variance, writes them to save_mean and
//   save_invstd = 1 / sqrt(var + eps), and, when running_mean and running_var are defined,
//   updates them in place: r = (1 - momentum) * r + momentum * batch_stat, using the unbiased
//   variance (PyTorch's and cuDNN's semantics). Needs more than one value per channel.
// inference: normalises with running_mean and running_var (both required) and writes them,
//   as mean and 1 / sqrt(var + eps), to save_mean and save_invstd for the backward pass.
void batch_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                        const Tensor& running_var, bool training, double momentum, double eps, const Tensor& out,
                        const Tensor& save_mean, const Tensor& save_invstd);
// Gradients for x, weight and bias; any of the three may be undefined to skip it. `training`
// must match the forward call: only then do the statistics depend on x.
void batch_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight, const Tensor& save_mean,
                         const Tensor& save_invstd, bool training, const Tensor& grad_x, const Tensor& grad_weight,
                         const Tensor& grad_bias);

// ---- softmax ----
// Over dimension `dim` (already normalised) of a contiguous tensor, with the row maximum
// subtracted first so exp never overflows. out has x's shape.
void softmax_forward(const Tensor& x, int64_t dim, const Tensor& out);
// grad_x = out * (grad_out - sum(grad_out * out)), from the forward output.
void softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim, const Tensor& grad_x);
void log_softmax_forward(const Tensor& x, int64_t dim, const Tensor& out);
// grad_x = grad_out - exp(out) * sum(grad_out), from the forward output.
void log_softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim, const Tensor& grad_x);

// ---- cross-entropy (fused log-softmax + negative log-likelihood) ----
// What PyTorch's cross_entropy takes besides its tensors. With lp = log_softmax over the C
// classes, w = weight (every class 1 when undefined) and s = label_smoothing, a row whose target t
// is not ignore_index loses
//   (1 - s) * w[t] * -lp[t] + (s / C) * sum_c w[c] * -lp[c]
// (PyTorch 1.13's formula, smoothing weighted too); an ignored row loses 0 and adds nothing to
// the mean's divisor.
struct CrossEntropyTerms {
  int64_t ignore_index = -100;
  double label_smoothing = 0;
};
// logits [N, C] or [N, C, d1, ...], target i64 [N] or [N, d1, ...] (logits without dim 1), weight
// [C] or undefined. Writes losses (target's shape), log_probs (logits' shape, kept for the
// backward pass) and total_weight [] (0-d): the sum of w[t] over the rows not ignored, the
// divisor of PyTorch's weighted mean. Throws naming the first target that is neither in [0, C)
// nor ignore_index, and its flat index (the kernel checks, since only it reads the target's
// memory).
void cross_entropy_forward(const Tensor& logits, const Tensor& target, const Tensor& weight,
                           const CrossEntropyTerms& terms, const Tensor& losses, const Tensor& log_probs,
                           const Tensor& total_weight);
// grad_logits (log_probs' shape) = grad_losses[row] * d loss[row] / d logits; zero in ignored rows.
void cross_entropy_backward(const Tensor& grad_losses, const Tensor& log_probs, const Tensor& target,
                            const Tensor& weight, const CrossEntropyTerms& terms, const Tensor& grad_logits);

}  // namespace duet::kernels
