// The one place each NN kernel dispatches on the device type: the kernel table of the output's
// device.
#include "duet/core/error.h"
#include "duet/kernels/backend.h"
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

}  // namespace

void conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dGeometry& geometry,
                    const Tensor& out) {
  NnCall(out.device(), "conv2d_forward")->conv2d_forward(x, weight, bias, geometry, out);
}

void conv2d_backward_input(const Tensor& grad_out, const Tensor& weight, const Conv2dGeometry& geometry,
                           const Tensor& grad_x) {
  NnCall(grad_x.device(), "conv2d_backward_input")->conv2d_backward_input(grad_out, weight, geometry, grad_x);
}

void conv2d_backward_weight(const Tensor& grad_out, const Tensor& x, const Conv2dGeometry& geometry,
                            const Tensor& grad_weight) {
  NnCall(grad_weight.device(), "conv2d_backward_weight")->conv2d_backward_weight(grad_out, x, geometry, grad_weight);
}

void max_pool2d_forward(const Tensor& x, const Pool2dGeometry& geometry, const Tensor& out, const Tensor& indices) {
  NnCall(out.device(), "max_pool2d_forward")->max_pool2d_forward(x, geometry, out, indices);
}

void max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, const Tensor& grad_x) {
  NnCall(grad_x.device(), "max_pool2d_backward")->max_pool2d_backward(grad_out, indices, grad_x);
}

void avg_pool2d_forward(const Tensor& x, const Pool2dGeometry& geometry, const Tensor& out) {
  NnCall(out.device(), "avg_pool2d_forward")->avg_pool2d_forward(x, geometry, out);
}

void avg_pool2d_backward(const Tensor& grad_out, const Pool2dGeometry& geometry, const Tensor& grad_x) {
  NnCall(grad_x.device(), "avg_pool2d_backward")->avg_pool2d_backward(grad_out, geometry, grad_x);
}

void adaptive_avg_pool2d_forward(const Tensor& x, const Tensor& out) {
  NnCall(out.device(), "adaptive_avg_pool2d_forward")->adaptive_avg_pool2d_forward(x, out);
}

void adaptive_avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_x) {
  NnCall(grad_x.device(), "adaptive_avg_pool2d_backward")->adaptive_avg_pool2d_backward(grad_out, grad_x);
}

void batch_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                        const Tensor& running_var, bool training, double momentum, double eps, const Tensor& out,
                        const Tensor& save_mean, const Tensor& save_invstd) {
  NnCall(out.device(), "batch_norm_forward")
      ->batch_norm_forward(x, weight, bias, running_mean, running_var, training, momentum, eps, out, save_mean,
                          save_invstd);
}

void batch_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight, const Tensor& save_mean,
                         const Tensor& save_invstd, bool training, const Tensor& grad_x, const Tensor& grad_weight,
                         const Tensor& grad_bias) {
  if (!grad_x.defined() && !grad_weight.defined() && !grad_bias.defined()) return;
  NnCall(grad_out.device(), "batch_norm_backward")
      ->batch_norm_backward(grad_out, x, weight, save_mean, save_invstd, training, grad_x, grad_weight, grad_bias);
}

void softmax_forward(const Tensor& x, int64_t dim, const Tensor& out) {
  NnCall(out.device(), "softmax_forward")->softmax_forward(x, dim, out);
}

void softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim, const Tensor& grad_x) {
  NnCall(grad_x.device(), "softmax_backward")->softmax_backward(grad_out, out, dim, grad_x);
}

void log_softmax_forward(const Tensor& x, int64_t dim, const Tensor& out) {
  NnCall(out.device(), "log_softmax_forward")->log_softmax_forward(x, dim, out);
}

void log_softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim, const Tensor& grad_x) {
  NnCall(grad_x.device(), "log_softmax_backward")->log_softmax_backward(grad_out, out, dim, grad_x);
}

void cross_entropy_forward(const Tensor& logits, const Tensor& target, const Tensor& losses,
                           const Tensor& log_probs) {
  NnCall(losses.device(), "cross_entropy_forward")->cross_entropy_forward(logits, target, losses, log_probs);
}

void cross_entropy_backward(const Tensor& grad_losses, const Tensor& log_probs, const Tensor& target,
                            const Tensor& grad_logits) {
  NnCall(grad_logits.device(), "cross_entropy_backward")
      ->cross_entropy_backward(grad_losses, log_probs, target, grad_logits);
}

}  // namespace duet::kernels
