// Batch norm through cuDNN, in CUDNN_BATCHNORM_SPATIAL mode: one mean and variance per channel
// over N x H x W. Not SPATIAL_PERSISTENT, which "imposes some limits on the range of values"
// (cudnn_ops.h) and cost PyTorch accuracy. Batch norm is not among the routines cuDNN lists as
// non-reproducible, so the results are the same run after run.
//
// cuDNN computes what nn_kernels.h defines: it normalises with the batch mean and biased
// variance, its saved inverse variance is 1 / sqrt(var + eps) (duet's save_invstd), and it moves
// the running statistics by exponentialAverageFactor (duet's momentum) towards the batch mean
// and the unbiased variance, as the CPU does. Its backward always differentiates through the
// batch statistics, so the backward of an inference forward stays with duet's kernels.
#include <algorithm>
#include <climits>
#include <initializer_list>

#include "duet/kernels/cuda/check.h"
#include "duet/kernels/cuda/cudnn_handle.h"
#include "duet/kernels/cuda/graph.h"
#include "duet/kernels/cuda/launchers.h"
#include "duet/kernels/cuda/nn_launchers.h"

namespace duet::cuda {
namespace {

constexpr cudnnBatchNormMode_t kMode = CUDNN_BATCHNORM_SPATIAL;

// duet's backward has no eps: it hands cuDNN the saved mean and inverse deviation, which cuDNN
// uses instead of recomputing them, so any eps cuDNN accepts will do.
constexpr double kBackwardEps = std::max(CUDNN_BN_MIN_EPSILON, 1e-5);

// 4-d descriptors take int sizes, and some cuDNN batch norm kernels index with 32 bits: x stays
// below 2^31 - 1 elements (then so does each size). A 0 size would be an error, not a decline.
bool takes(double eps, const Tensor& x, std::initializer_list<Tensor> operands) {
  if (eps < CUDNN_BN_MIN_EPSILON || x.numel() == 0 || x.numel() >= INT_MAX) return false;
  return std::all_of(operands.begin(), operands.end(),
                     [](const Tensor& t) { return !t.defined() || t.is_contiguous(); });
}

// false when cuDNN declines the case (NOT_SUPPORTED or one of its sub-codes); any other failure
// throws, naming the call, as DUET_CUDNN_CHECK does. While a CUDA graph records the device, a
// call that failed or broke the recording throws, naming the capture-safe alternative.
bool accepted(cudnnStatus_t status, const char* call, int line, Device device) {
  if (cudnn_not_supported(status)) return false;
  if (capturing(device))
    check_recording(device, call, status == CUDNN_STATUS_SUCCESS ? "" : cudnnGetErrorString(status),
                    "DUET_BATCH_NORM_KERNELS=duet runs batch norm on duet's own kernels, which record");
  if (status != CUDNN_STATUS_SUCCESS) detail::throw_cudnn_error(status, call, __FILE__, line);
  return true;
}

// One tensor descriptor, destroyed with its owner (also when a later setup step throws).
class TensorDescriptor {
 public:
  TensorDescriptor() { DUET_CUDNN_CHECK(cudnnCreateTensorDescriptor(&desc_)); }
  ~TensorDescriptor() { cudnnDestroyTensorDescriptor(desc_); }  // cannot fail on a valid descriptor
  TensorDescriptor(const TensorDescriptor&) = delete;
  TensorDescriptor& operator=(const TensorDescriptor&) = delete;
  cudnnTensorDescriptor_t get() const { return desc_; }

 private:
  cudnnTensorDescriptor_t desc_ = nullptr;
};

// x (and out, dy, dx) as NCHW, [N, C] as [N, C, 1, 1]; the per-channel tensors' descriptor is
// derived from it, as cuDNN asks (1 x C x 1 x 1, f32 for f32 data and f64 for f64).
struct Descriptors {
  explicit Descriptors(const Tensor& x) {
    const bool spatial = x.dim() == 4;
    DUET_CUDNN_CHECK(cudnnSetTensor4dDescriptor(data.get(), CUDNN_TENSOR_NCHW, cudnn_type(x.dtype()), int(x.size(0)),
                                                int(x.size(1)), spatial ? int(x.size(2)) : 1,
                                                spatial ? int(x.size(3)) : 1));
    DUET_CUDNN_CHECK(cudnnDeriveBNTensorDescriptor(channel.get(), data.get(), kMode));
  }

  TensorDescriptor data, channel;
};

// cuDNN's blend factors, in host memory: double for double data, float otherwise.
class Blend {
 public:
  explicit Blend(DType dtype) : f64_(dtype == DType::f64) {}
  const void* one() const { return f64_ ? static_cast<const void*>(&one_d_) : &one_f_; }
  const void* zero() const { return f64_ ? static_cast<const void*>(&zero_d_) : &zero_f_; }

 private:
  bool f64_;
  float one_f_ = 1, zero_f_ = 0;
  double one_d_ = 1, zero_d_ = 0;
};

// Temporaries come from the caching allocator; freed on return, they are reused only on this
// stream, after the cuDNN call that reads or writes them.
Tensor scratch_like(const Shape& sizes, const Tensor& like) {
  return empty_contiguous(sizes, like.dtype(), like.device());
}

// weight or bias, or, where undefined, a [C] tensor of `value`: cuDNN's scale and bias are required.
Tensor channel_or(const Tensor& t, double value, const Tensor& x, cudaStream_t stream) {
  if (t.defined()) return t;
  Tensor filled = scratch_like({x.size(1)}, x);
  launch_fill(filled, value, stream);
  return filled;
}

// An output cuDNN always writes, or scratch of its shape where the caller does not want it.
Tensor wanted_or_scratch(const Tensor& t, const Tensor& shape_of) {
  return t.defined() ? t : scratch_like(shape_of.sizes(), shape_of);
}

void* data_or_null(const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

}  // namespace

bool cudnn_batch_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                              const Tensor& running_var, bool training, double momentum, double eps, const Tensor& out,
                              const Tensor& save_mean, const Tensor& save_invstd, Device device, cudaStream_t stream) {
  if (!takes(eps, x, {x, weight, bias, running_mean, running_var, out, save_mean, save_invstd})) return false;
  const Tensor scale = channel_or(weight, 1.0, x, stream), shift = channel_or(bias, 0.0, x, stream);
  const Descriptors d(x);
  const Blend blend(x.dtype());
  const CudnnHandle handle(device);
  if (!training) {
    const cudnnStatus_t status = cudnnBatchNormalizationForwardInference(
        handle.get(), kMode, blend.one(), blend.zero(), d.data.get(), x.data_ptr(), d.data.get(), out.data_ptr(),
        d.channel.get(), scale.data_ptr(), shift.data_ptr(), running_mean.data_ptr(), running_var.data_ptr(), eps);
    if (!accepted(status, "cudnnBatchNormalizationForwardInference", __LINE__, device)) return false;
    launch_batch_norm_inference_stats(running_mean, running_var, eps, save_mean, save_invstd, stream);
    return true;
  }
  // Without running statistics both pointers are null, which cuDNN allows (the factor is then unused).
  const cudnnStatus_t status = cudnnBatchNormalizationForwardTraining(
      handle.get(), kMode, blend.one(), blend.zero(), d.data.get(), x.data_ptr(), d.data.get(), out.data_ptr(),
      d.channel.get(), scale.data_ptr(), shift.data_ptr(), momentum, data_or_null(running_mean),
      data_or_null(running_var), eps, save_mean.data_ptr(), save_invstd.data_ptr());
  return accepted(status, "cudnnBatchNormalizationForwardTraining", __LINE__, device);
}

bool cudnn_batch_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight, const Tensor& save_mean,
                               const Tensor& save_invstd, bool training, const Tensor& grad_x,
                               const Tensor& grad_weight, const Tensor& grad_bias, Device device, cudaStream_t stream) {
  // With the statistics held constant (inference) out is affine in x: a gradient cuDNN does not compute.
  if (!training) return false;
  if (!takes(kBackwardEps, x, {grad_out, x, weight, save_mean, save_invstd, grad_x, grad_weight, grad_bias}))
    return false;
  const Tensor scale = channel_or(weight, 1.0, x, stream);
  const Tensor dx = wanted_or_scratch(grad_x, x), dscale = wanted_or_scratch(grad_weight, save_mean),
               dbias = wanted_or_scratch(grad_bias, save_mean);
  const Descriptors d(x);
  const Blend blend(x.dtype());
  const CudnnHandle handle(device);
  // x, dy and dx share one descriptor; the saved statistics are duet's save_mean and save_invstd.
  const cudnnStatus_t status = cudnnBatchNormalizationBackward(
      handle.get(), kMode, blend.one(), blend.zero(), blend.one(), blend.zero(), d.data.get(), x.data_ptr(),
      d.data.get(), grad_out.data_ptr(), d.data.get(), dx.data_ptr(), d.channel.get(), scale.data_ptr(),
      dscale.data_ptr(), dbias.data_ptr(), kBackwardEps, save_mean.data_ptr(), save_invstd.data_ptr());
  return accepted(status, "cudnnBatchNormalizationBackward", __LINE__, device);
}

}  // namespace duet::cuda
