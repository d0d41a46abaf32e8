// The NN kernels: their operand contract (nn_kernels.h), checked here once for every backend, and
// the one dispatch on the output's device type. A caller's mistake throws, naming the op and each
// tensor by its parameter's name, instead of reading or writing out of bounds in a kernel. The
// kernels build their layouts (nn_layouts.h) from shapes checked here, and check nothing but
// what only they can read: cross-entropy's targets, in the target's memory.
#include <initializer_list>
#include <string>

#include "duet/core/error.h"
#include "duet/kernels/backend.h"
#include "duet/kernels/functors.h"
#include "duet/kernels/nn_layouts.h"
#include "duet/kernels/operand.h"
#include "duet/kernels/profiler.h"

namespace duet::kernels {
namespace {

// One call on the table of `device`'s type, timed as `op` by the profiler: the temporary lives,
// and times, until the end of the statement that makes the call.
struct NnCall {
  NnCall(Device device, const char* op) : profile(op), backend(backend_for(device, op)) {}
  const Backend* operator->() const { return &backend; }
  profiler::Scope profile;
  const Backend& backend;
};

Operand optional(const char* role, const Tensor& t) { return {role, t, true}; }

// Every defined floating operand contiguous, all of one floating dtype (f32 or f64).
void check_floating(const char* op, std::initializer_list<Operand> operands) {
  const Operand* first = nullptr;
  for (const Operand& o : operands) {
    DUET_CHECK(o.optional || o.tensor.defined(), op, ": ", o.role, " is required but undefined");
    if (!o.tensor.defined()) continue;
    DUET_CHECK(o.tensor.is_contiguous(), op, ": ", o.str(), " is not contiguous");
    if (!first) {
      first = &o;
      DUET_CHECK(is_floating(o.tensor.dtype()), op, ": expected a floating dtype (f32 or f64), got ", o.str());
    }
    DUET_CHECK(o.tensor.dtype() == first->tensor.dtype(), op, ": ", o.str(), " and ", first->str(),
               " have different dtypes");
  }
}

// An index operand (max-pool positions, class targets): contiguous i64.
void check_index(const char* op, const Operand& o) {
  DUET_CHECK(o.tensor.defined(), op, ": ", o.role, " is required but undefined");
  DUET_CHECK(o.tensor.dtype() == DType::i64 && o.tensor.is_contiguous(), op, ": expected ", o.role,
             " to be a contiguous i64 tensor, got ", o.str());
}

void check_same_shape(const char* op, const Operand& a, const Operand& b) {
  DUET_CHECK(a.tensor.sizes() == b.tensor.sizes(), op, ": ", a.str(), " does not match ", b.str(),
             " (the same shape expected)");
}

// Whether x (*) weight gives out's shape [N, K, Ho, Wo], or, `pooled`, its [N, K] and any size
// (the convolution's output before a pooling, checked by window_gives).
bool conv_gives(const Tensor& x, const Tensor& weight, const Conv2dGeometry& g, const Tensor& out, bool pooled) {
  const bool valid_geometry = g.groups >= 1 && g.stride.h >= 1 && g.stride.w >= 1 && g.padding.h >= 0 &&
                              g.padding.w >= 0 && g.dilation.h >= 1 && g.dilation.w >= 1;
  return valid_geometry && x.dim() == 4 && weight.dim() == 4 && out.dim() == 4 && x.size(0) == out.size(0) &&
         x.size(1) == weight.size(1) * g.groups && out.size(1) == weight.size(0) && weight.size(0) % g.groups == 0 &&
         (pooled || conv2d_output_size(g, {x.size(2), x.size(3)}, {weight.size(2), weight.size(3)}) ==
                        PerAxis(out.size(2), out.size(3)));
}

std::string conv_str(const Conv2dGeometry& g) {
  return ::duet::detail::concat("stride ", g.stride, ", padding ", g.padding, ", dilation ", g.dilation, ", groups ",
                                g.groups);
}

// x (*) weight -> out, as ConvLayout reads them (in the backward kernels x and out are the
// gradients grad_x and grad_out): x's channels and weight's filters split into `groups`, and out's
// size the geometry's.
void check_conv(const char* op, const Operand& x, const Operand& weight, const Operand& out, const Conv2dGeometry& g) {
  DUET_CHECK(conv_gives(x.tensor, weight.tensor, g, out.tensor, false), op, ": shapes do not match: ", x.str(), ", ",
             weight.str(), ", ", out.str(), ", ", conv_str(g));
}

// x [N, C, H, W] pooled to out [N, C, Ho, Wo] (grad_x and grad_out in the backward kernels).
void check_planes(const char* op, const Operand& x, const Operand& out) {
  const Tensor &xt = x.tensor, &ot = out.tensor;
  DUET_CHECK(xt.dim() == 4 && ot.dim() == 4 && xt.size(0) == ot.size(0) && xt.size(1) == ot.size(1), op,
             ": shapes do not match: ", x.str(), ", ", out.str());
}

// A sliding window that starts within the input or its left padding: past that it would read
// (and its backward write) outside the plane. Padding of at most half the kernel and
// window_output_size's ceil-mode rule see to it; with dilation, each window must also hold an
// input element (its first tap is where its maximum's position starts).
bool window_gives(PerAxis in, const Tensor& out, const Pool2dGeometry& g) {
  if (!(g.kernel.h >= 1 && g.kernel.w >= 1 && g.stride.h >= 1 && g.stride.w >= 1 && g.padding.h >= 0 &&
        g.padding.w >= 0 && 2 * g.padding.h <= g.kernel.h && 2 * g.padding.w <= g.kernel.w && g.dilation.h >= 1 &&
        g.dilation.w >= 1 && pool2d_output_size(g, in) == PerAxis(out.size(2), out.size(3)))) {
    return false;
  }
  return AxisWindows::sliding(in.h, out.size(2), g.kernel.h, g.stride.h, g.padding.h, true, g.dilation.h)
             .windows_hold_input() &&
         AxisWindows::sliding(in.w, out.size(3), g.kernel.w, g.stride.w, g.padding.w, true, g.dilation.w)
             .windows_hold_input();
}

std::string pool_str(const Pool2dGeometry& g) {
  return ::duet::detail::concat(
      "kernel ", g.kernel, ", stride ", g.stride, ", padding ", g.padding, g.ceil_mode ? ", ceil_mode" : "",
      g.dilation != PerAxis(1) ? ::duet::detail::concat(", dilation ", g.dilation) : "",
      g.divisor_override != 0 ? ::duet::detail::concat(", divisor_override ", g.divisor_override) : "");
}

// Dilation is max pooling's option, divisor_override average pooling's.
void check_window(const char* op, const Operand& x, const Operand& out, const Pool2dGeometry& g, bool average) {
  check_planes(op, x, out);
  DUET_CHECK(window_gives({x.tensor.size(2), x.tensor.size(3)}, out.tensor, g), op, ": ", out.str(), " does not match ",
             x.str(), " with ", pool_str(g));
  DUET_CHECK(average ? g.dilation == PerAxis(1) : g.divisor_override == 0, op, ": ",
             average ? "average pooling takes no dilation" : "max pooling takes no divisor_override", ", got ",
             pool_str(g));
}

// x (*) weight, then pooled to out (grad_out in the backward).
void check_conv_pool(const char* op, const Operand& x, const Operand& weight, const Operand& out,
                     const Conv2dGeometry& conv, const Pool2dGeometry& pool) {
  const Tensor &xt = x.tensor, &wt = weight.tensor;
  const bool conv_ok = conv_gives(xt, wt, conv, out.tensor, true);
  DUET_CHECK(
      conv_ok && pool.dilation == PerAxis(1) &&
          window_gives(conv2d_output_size(conv, {xt.size(2), xt.size(3)}, {wt.size(2), wt.size(3)}), out.tensor, pool),
      op, ": shapes do not match: ", x.str(), ", ", weight.str(), ", ", out.str(), ", convolution ", conv_str(conv),
      ", pooling ", pool_str(pool));
}

// One bias per filter, when there is one.
void check_bias(const char* op, const Tensor& bias, const Tensor& weight) {
  DUET_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0)), op, ": bias ", bias.describe(),
             " does not match the ", weight.size(0), " filters of weight ", weight.describe());
}

void check_pool_activation(const char* op, std::optional<UnaryOp> activation) {
  DUET_CHECK(!activation || functors::pooling_can_fuse(*activation), op, ": unary op ", name(*activation),
             " is not an activation a pooling can fuse (relu, sigmoid, tanh)");
}

// x [N, C] or [N, C, H, W], and one value per channel in every defined per-channel operand.
void check_channels(const char* op, const Operand& x, std::initializer_list<Operand> per_channel) {
  const Tensor& xt = x.tensor;
  DUET_CHECK(xt.dim() == 2 || xt.dim() == 4, op, ": expected ", x.role, " of shape [N, C] or [N, C, H, W], got ",
             xt.describe());
  for (const Operand& o : per_channel) {
    if (!o.tensor.defined()) continue;
    DUET_CHECK(o.tensor.dim() == 1 && o.tensor.size(0) == xt.size(1), op, ": ", o.str(), " does not match the ",
               xt.size(1), " channels of ", x.str(), " (expected shape [", xt.size(1), "])");
  }
}

// The same shape, and a dim within it (0 for a scalar, seen as one row of one element).
void check_rows(const char* op, const Operand& a, const Operand& b, int64_t dim) {
  check_same_shape(op, a, b);
  DUET_CHECK(dim >= 0 && (dim < a.tensor.dim() || (a.tensor.dim() == 0 && dim == 0)), op, ": dim ", dim,
             " out of range for ", a.str());
}

// scores [N, C, d1, ...] (rank >= 2), and target and one value per row both scores' shape without
// dim 1; weight [C] when defined.
void check_classes(const char* op, const Operand& scores, const Operand& target, const Operand& per_row,
                   const Operand& weight) {
  check_index(op, target);
  const Tensor &s = scores.tensor, &t = target.tensor, &r = per_row.tensor;
  Shape rows;
  for (int64_t d = 0; d < s.dim(); ++d) {
    if (d != 1) rows.push_back(s.size(d));
  }
  DUET_CHECK(s.dim() >= 2 && t.sizes() == rows && r.sizes() == rows, op, ": shapes do not match: ", scores.str(), ", ",
             target.str(), ", ", per_row.str());
  DUET_CHECK(!weight.tensor.defined() || (weight.tensor.dim() == 1 && weight.tensor.size(0) == s.size(1)), op, ": ",
             weight.str(), " does not match the ", s.size(1), " classes of ", scores.str());
}

void check_terms(const char* op, const CrossEntropyTerms& terms) {
  DUET_CHECK(terms.label_smoothing >= 0 && terms.label_smoothing <= 1, op, ": label_smoothing must be in [0, 1], got ",
             terms.label_smoothing);
}

}  // namespace

void conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dGeometry& geometry,
                    const Tensor& out) {
  const char* op = "conv2d_forward";
  check_floating(op, {{"x", x}, {"weight", weight}, optional("bias", bias), {"out", out}});
  check_conv(op, {"x", x}, {"weight", weight}, {"out", out}, geometry);
  check_bias(op, bias, weight);
  NnCall(out.device(), op)->conv2d_forward(x, weight, bias, geometry, out);
}

void conv2d_backward_input(const Tensor& grad_out, const Tensor& weight, const Conv2dGeometry& geometry,
                           const Tensor& grad_x) {
  const char* op = "conv2d_backward_input";
  check_floating(op, {{"grad_out", grad_out}, {"weight", weight}, {"grad_x", grad_x}});
  check_conv(op, {"grad_x", grad_x}, {"weight", weight}, {"grad_out", grad_out}, geometry);
  NnCall(grad_x.device(), op)->conv2d_backward_input(grad_out, weight, geometry, grad_x);
}

void conv2d_backward_weight(const Tensor& grad_out, const Tensor& x, const Conv2dGeometry& geometry,
                            const Tensor& grad_weight, const Tensor& grad_bias) {
  const char* op = "conv2d_backward_weight";
  check_floating(op,
                 {{"grad_out", grad_out}, {"x", x}, {"grad_weight", grad_weight}, optional("grad_bias", grad_bias)});
  check_conv(op, {"x", x}, {"grad_weight", grad_weight}, {"grad_out", grad_out}, geometry);
  DUET_CHECK(!grad_bias.defined() || grad_bias.sizes() == Shape{grad_weight.size(0)}, op, ": grad_bias ",
             grad_bias.describe(), " does not match grad_weight ", grad_weight.describe(), " (one per filter)");
  NnCall(grad_weight.device(), op)->conv2d_backward_weight(grad_out, x, geometry, grad_weight, grad_bias);
}

void max_pool2d_forward(const Tensor& x, const Pool2dGeometry& geometry, const Tensor& out, const Tensor& indices) {
  const char* op = "max_pool2d_forward";
  check_floating(op, {{"x", x}, {"out", out}});
  check_index(op, {"indices", indices});
  check_window(op, {"x", x}, {"out", out}, geometry, false);
  check_same_shape(op, {"indices", indices}, {"out", out});
  NnCall(out.device(), op)->max_pool2d_forward(x, geometry, out, indices);
}

void max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, const std::optional<Pool2dGeometry>& window,
                         const Tensor& grad_x) {
  const char* op = "max_pool2d_backward";
  check_floating(op, {{"grad_out", grad_out}, {"grad_x", grad_x}});
  check_index(op, {"indices", indices});
  if (window) {
    check_window(op, {"grad_x", grad_x}, {"grad_out", grad_out}, *window, false);
  } else {
    check_planes(op, {"grad_x", grad_x}, {"grad_out", grad_out});
  }
  check_same_shape(op, {"indices", indices}, {"grad_out", grad_out});
  NnCall(grad_x.device(), op)->max_pool2d_backward(grad_out, indices, window, grad_x);
}

const char* avg_pool2d_name(std::optional<UnaryOp> activation, bool backward) {
  if (activation) return backward ? "activated_avg_pool2d_backward" : "activated_avg_pool2d_forward";
  return backward ? "avg_pool2d_backward" : "avg_pool2d_forward";
}

void avg_pool2d_forward(const Tensor& x, const Pool2dGeometry& geometry, std::optional<UnaryOp> activation,
                        const Tensor& out) {
  // Named apart when fused, so that the profiler and the errors tell the two ops apart.
  const char* op = avg_pool2d_name(activation, false);
  check_pool_activation(op, activation);
  check_floating(op, {{"x", x}, {"out", out}});
  check_window(op, {"x", x}, {"out", out}, geometry, true);
  NnCall(out.device(), op)->avg_pool2d_forward(x, geometry, activation, out);
}

void avg_pool2d_backward(const Tensor& grad_out, const Tensor& x, const Pool2dGeometry& geometry,
                         std::optional<UnaryOp> activation, const Tensor& grad_x) {
  const char* op = avg_pool2d_name(activation, true);
  check_pool_activation(op, activation);
  check_floating(op, {{"grad_out", grad_out}, {"grad_x", grad_x}});
  check_window(op, {"grad_x", grad_x}, {"grad_out", grad_out}, geometry, true);
  if (activation) {  // the activation's gradient reads x
    check_floating(op, {{"x", x}, {"grad_x", grad_x}});
    check_same_shape(op, {"x", x}, {"grad_x", grad_x});
  }
  NnCall(grad_x.device(), op)->avg_pool2d_backward(grad_out, x, geometry, activation, grad_x);
}

void conv2d_avg_pool2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dGeometry& conv,
                               std::optional<UnaryOp> activation, const Pool2dGeometry& pool, const Tensor& out) {
  const char* op = "conv2d_avg_pool2d_forward";
  check_pool_activation(op, activation);
  check_floating(op, {{"x", x}, {"weight", weight}, optional("bias", bias), {"out", out}});
  check_conv_pool(op, {"x", x}, {"weight", weight}, {"out", out}, conv, pool);
  check_bias(op, bias, weight);
  NnCall(out.device(), op)->conv2d_avg_pool2d_forward(x, weight, bias, conv, activation, pool, out);
}

void conv2d_avg_pool2d_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight, const Tensor& bias,
                                const Conv2dGeometry& conv, std::optional<UnaryOp> activation,
                                const Pool2dGeometry& pool, const Tensor& grad_x, const Tensor& grad_weight,
                                const Tensor& grad_bias) {
  const char* op = "conv2d_avg_pool2d_backward";
  check_pool_activation(op, activation);
  check_floating(op, {{"grad_out", grad_out},
                      {"x", x},
                      {"weight", weight},
                      optional("bias", bias),
                      optional("grad_x", grad_x),
                      optional("grad_weight", grad_weight),
                      optional("grad_bias", grad_bias)});
  check_conv_pool(op, {"x", x}, {"weight", weight}, {"grad_out", grad_out}, conv, pool);
  check_bias(op, bias, weight);
  if (grad_x.defined()) check_same_shape(op, {"grad_x", grad_x}, {"x", x});
  if (grad_weight.defined()) check_same_shape(op, {"grad_weight", grad_weight}, {"weight", weight});
  DUET_CHECK(!grad_bias.defined() || grad_bias.sizes() == Shape{weight.size(0)}, op, ": grad_bias ",
             grad_bias.describe(), " does not match the ", weight.size(0), " filters of weight ", weight.describe());
  NnCall(grad_out.device(), op)
      ->conv2d_avg_pool2d_backward(grad_out, x, weight, bias, conv, activation, pool, grad_x, grad_weight, grad_bias);
}

void adaptive_avg_pool2d_forward(const Tensor& x, const Tensor& out) {
  const char* op = "adaptive_avg_pool2d_forward";
  check_floating(op, {{"x", x}, {"out", out}});
  check_planes(op, {"x", x}, {"out", out});
  NnCall(out.device(), op)->adaptive_avg_pool2d_forward(x, out);
}

void adaptive_avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_x) {
  const char* op = "adaptive_avg_pool2d_backward";
  check_floating(op, {{"grad_out", grad_out}, {"grad_x", grad_x}});
  check_planes(op, {"grad_x", grad_x}, {"grad_out", grad_out});
  NnCall(grad_x.device(), op)->adaptive_avg_pool2d_backward(grad_out, grad_x);
}

void adaptive_max_pool2d_forward(const Tensor& x, const Tensor& out, const Tensor& indices) {
  const char* op = "adaptive_max_pool2d_forward";
  check_floating(op, {{"x", x}, {"out", out}});
  check_index(op, {"indices", indices});
  check_planes(op, {"x", x}, {"out", out});
  check_same_shape(op, {"indices", indices}, {"out", out});
  // An empty window has no maximum, and its index would point outside the plane.
  DUET_CHECK(out.numel() == 0 || (x.size(2) >= 1 && x.size(3) >= 1), op, ": x ", x.describe(),
             " has empty planes: there is no maximum to take");
  NnCall(out.device(), op)->adaptive_max_pool2d_forward(x, out, indices);
}

void batch_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                        const Tensor& running_var, bool training, double momentum, double eps, const Tensor& out,
                        const Tensor& save_mean, const Tensor& save_invstd) {
  const char* op = "batch_norm_forward";
  check_floating(op, {{"x", x},
                      optional("weight", weight),
                      optional("bias", bias),
                      optional("running_mean", running_mean),
                      optional("running_var", running_var),
                      {"out", out},
                      {"save_mean", save_mean},
                      {"save_invstd", save_invstd}});
  check_channels(op, {"x", x},
                 {{"weight", weight},
                  {"bias", bias},
                  {"running_mean", running_mean},
                  {"running_var", running_var},
                  {"save_mean", save_mean},
                  {"save_invstd", save_invstd}});
  check_same_shape(op, {"out", out}, {"x", x});
  DUET_CHECK(training || (running_mean.defined() && running_var.defined()), op,
             ": inference needs running_mean and running_var");
  DUET_CHECK(!training || ChannelLayout::of(x).count() > 1, op,
             ": expected more than 1 value per channel when training, got x ", x.describe());
  NnCall(out.device(), op)
      ->batch_norm_forward(x, weight, bias, running_mean, running_var, training, momentum, eps, out, save_mean,
                           save_invstd);
}

void batch_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight, const Tensor& save_mean,
                         const Tensor& save_invstd, bool training, const Tensor& grad_x, const Tensor& grad_weight,
                         const Tensor& grad_bias) {
  if (!grad_x.defined() && !grad_weight.defined() && !grad_bias.defined()) return;
  const char* op = "batch_norm_backward";
  check_floating(op, {{"grad_out", grad_out},
                      {"x", x},
                      optional("weight", weight),
                      {"save_mean", save_mean},
                      {"save_invstd", save_invstd},
                      optional("grad_x", grad_x),
                      optional("grad_weight", grad_weight),
                      optional("grad_bias", grad_bias)});
  check_channels(op, {"x", x},
                 {{"weight", weight},
                  {"save_mean", save_mean},
                  {"save_invstd", save_invstd},
                  {"grad_weight", grad_weight},
                  {"grad_bias", grad_bias}});
  check_same_shape(op, {"grad_out", grad_out}, {"x", x});
  if (grad_x.defined()) check_same_shape(op, {"grad_x", grad_x}, {"x", x});
  NnCall(grad_out.device(), op)
      ->batch_norm_backward(grad_out, x, weight, save_mean, save_invstd, training, grad_x, grad_weight, grad_bias);
}

// softmax and log_softmax take the same operands and checks, spelled out per op so each reads alone.
void softmax_forward(const Tensor& x, int64_t dim, const Tensor& out) {
  const char* op = "softmax_forward";
  check_floating(op, {{"x", x}, {"out", out}});
  check_rows(op, {"x", x}, {"out", out}, dim);
  NnCall(out.device(), op)->softmax_forward(x, dim, out);
}

void softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim, const Tensor& grad_x) {
  const char* op = "softmax_backward";
  check_floating(op, {{"grad_out", grad_out}, {"out", out}, {"grad_x", grad_x}});
  check_rows(op, {"out", out}, {"grad_out", grad_out}, dim);
  check_same_shape(op, {"grad_x", grad_x}, {"out", out});
  NnCall(grad_x.device(), op)->softmax_backward(grad_out, out, dim, grad_x);
}

void log_softmax_forward(const Tensor& x, int64_t dim, const Tensor& out) {
  const char* op = "log_softmax_forward";
  check_floating(op, {{"x", x}, {"out", out}});
  check_rows(op, {"x", x}, {"out", out}, dim);
  NnCall(out.device(), op)->log_softmax_forward(x, dim, out);
}

void log_softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim, const Tensor& grad_x) {
  const char* op = "log_softmax_backward";
  check_floating(op, {{"grad_out", grad_out}, {"out", out}, {"grad_x", grad_x}});
  check_rows(op, {"out", out}, {"grad_out", grad_out}, dim);
  check_same_shape(op, {"grad_x", grad_x}, {"out", out});
  NnCall(grad_x.device(), op)->log_softmax_backward(grad_out, out, dim, grad_x);
}

void cross_entropy_forward(const Tensor& logits, const Tensor& target, const Tensor& weight,
                           const CrossEntropyTerms& terms, const Tensor& losses, const Tensor& log_probs,
                           const Tensor& total_weight) {
  const char* op = "cross_entropy_forward";
  check_floating(op, {{"logits", logits},
                      optional("weight", weight),
                      {"losses", losses},
                      {"log_probs", log_probs},
                      {"total_weight", total_weight}});
  check_classes(op, {"logits", logits}, {"target", target}, {"losses", losses}, optional("weight", weight));
  check_same_shape(op, {"log_probs", log_probs}, {"logits", logits});
  check_terms(op, terms);
  DUET_CHECK(total_weight.dim() == 0, op, ": expected total_weight of shape [], got ", total_weight.describe());
  NnCall(losses.device(), op)->cross_entropy_forward(logits, target, weight, terms, losses, log_probs, total_weight);
}

void cross_entropy_backward(const Tensor& grad_losses, const Tensor& log_probs, const Tensor& target,
                            const Tensor& weight, const CrossEntropyTerms& terms, const Tensor& grad_logits) {
  const char* op = "cross_entropy_backward";
  check_floating(op, {{"grad_losses", grad_losses},
                      {"log_probs", log_probs},
                      optional("weight", weight),
                      {"grad_logits", grad_logits}});
  check_classes(op, {"log_probs", log_probs}, {"target", target}, {"grad_losses", grad_losses},
                optional("weight", weight));
  check_same_shape(op, {"grad_logits", grad_logits}, {"log_probs", log_probs});
  check_terms(op, terms);
  NnCall(grad_logits.device(), op)->cross_entropy_backward(grad_losses, log_probs, target, weight, terms, grad_logits);
}

}  // namespace duet::kernels
