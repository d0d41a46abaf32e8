// conv2d through cuDNN: the shared handle of the logical device (cudnn_handle.h), an algorithm
// chosen once per (direction, shape, dtype, TF32 setting) and cached, its workspace taken from
// duet's caching allocator.
//
// Algorithms come from cuDNN's heuristics (cudnnGet*Algorithm_v7), not from timing runs
// (cudnnFind*), so the choice, and with it the result, is the same run after run. Only
// deterministic algorithms are used, and for f32 only FMA ones unless set_allow_tf32(true):
// cuDNN's default math allows TF32 on Ampere and later. The candidates are tried in cuDNN's
// order and the first that runs is kept (ranked_candidates.h); only when none runs does the
// caller fall back to im2col, and each such step is said once on stderr. Only two failures move
// on to the next candidate: cuDNN's not-supported answer (dropped for good) and no memory for the
// workspace now (skipped for this call only). Any other failure (a bad parameter, a failed
// execution, an illegal address) throws, naming the call and the layer's shapes: a fallback
// would hide a real error.
//
// While a CUDA graph records the device, a failing call throws, naming itself and
// DUET_CONV_IM2COL=1 (graph.h's check_recording): no precedent shows that cuDNN's legacy
// convolution API records, and a fallback inside a broken recording would hide which call broke it.
#include <algorithm>
#include <array>
#include <climits>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "duet/kernels/cuda/check.h"
#include "duet/kernels/cuda/conv2d.h"
#include "duet/kernels/cuda/cudnn_handle.h"
#include "duet/kernels/cuda/graph.h"
#include "duet/kernels/cuda/ranked_candidates.h"
#include "duet/kernels/cuda/runtime.h"

namespace duet::cuda {
namespace {

enum class Direction { forward, backward_data, backward_filter };

// The descriptors of one convolution: x [N, C, H, W] (the input, or its gradient),
// w [K, C / groups, kh, kw] and y [N, K, Ho, Wo] (the output, or its gradient). Per-axis stride,
// padding and dilation go into the convolution descriptor, and groups as its group count.
class Descriptors {
 public:
  Descriptors(const ConvLayout& g, DType dtype) {
    const cudnnDataType_t type = cudnn_type(dtype);
    DUET_CUDNN_CHECK(cudnnCreateTensorDescriptor(&x));
    DUET_CUDNN_CHECK(cudnnCreateTensorDescriptor(&y));
    DUET_CUDNN_CHECK(cudnnCreateFilterDescriptor(&w));
    DUET_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv));
    DUET_CUDNN_CHECK(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, type, int(g.batch), int(g.channels),
                                                int(g.height), int(g.width)));
    DUET_CUDNN_CHECK(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, type, int(g.batch), int(g.filters), int(g.out_h),
                                                int(g.out_w)));
    DUET_CUDNN_CHECK(cudnnSetFilter4dDescriptor(w, type, CUDNN_TENSOR_NCHW, int(g.filters), int(g.group_channels()),
                                                int(g.kernel_h), int(g.kernel_w)));
    DUET_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv, int(g.padding.h), int(g.padding.w), int(g.stride.h),
                                                     int(g.stride.w), int(g.dilation.h), int(g.dilation.w),
                                                     CUDNN_CROSS_CORRELATION, type));
    DUET_CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv, int(g.groups)));
  }
  ~Descriptors() {  // destroying a valid descriptor cannot fail
    cudnnDestroyConvolutionDescriptor(conv);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyTensorDescriptor(x);
  }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;

  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
};

// Device pointers of one call; the direction says which one is written.
struct Pointers {
  void* x;
  void* w;
  void* y;
};

// The cuDNN entry points of each direction, so the search, the cache and the call are written once.
// The three specialisations look alike on purpose: each names its direction's cuDNN types and calls
// with their own argument order, which a merged table would hide.
template <Direction D> struct Ops;

template <> struct Ops<Direction::forward> {
  using Perf = cudnnConvolutionFwdAlgoPerf_t;
  using Algo = cudnnConvolutionFwdAlgo_t;
  static constexpr int kAlgorithms = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
  static constexpr const char* kName = "cudnnConvolutionForward";
  static cudnnStatus_t candidates(cudnnHandle_t h, const Descriptors& d, int* count, Perf* perf) {
    return cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y, kAlgorithms, count, perf);
  }
  static cudnnStatus_t workspace(cudnnHandle_t h, const Descriptors& d, Algo algo, size_t* bytes) {
    return cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.conv, d.y, algo, bytes);
  }
  static cudnnStatus_t run(cudnnHandle_t h, const Descriptors& d, Algo algo, void* ws, size_t bytes, const void* alpha,
                           const void* beta, const Pointers& p) {
    return cudnnConvolutionForward(h, alpha, d.x, p.x, d.w, p.w, d.conv, algo, ws, bytes, beta, d.y, p.y);
  }
};

template <> struct Ops<Direction::backward_data> {
  using Perf = cudnnConvolutionBwdDataAlgoPerf_t;
  using Algo = cudnnConvolutionBwdDataAlgo_t;
  static constexpr int kAlgorithms = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
  static constexpr const char* kName = "cudnnConvolutionBackwardData";
  static cudnnStatus_t candidates(cudnnHandle_t h, const Descriptors& d, int* count, Perf* perf) {
    return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w, d.y, d.conv, d.x, kAlgorithms, count, perf);
  }
  static cudnnStatus_t workspace(cudnnHandle_t h, const Descriptors& d, Algo algo, size_t* bytes) {
    return cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w, d.y, d.conv, d.x, algo, bytes);
  }
  static cudnnStatus_t run(cudnnHandle_t h, const Descriptors& d, Algo algo, void* ws, size_t bytes, const void* alpha,
                           const void* beta, const Pointers& p) {
    return cudnnConvolutionBackwardData(h, alpha, d.w, p.w, d.y, p.y, d.conv, algo, ws, bytes, beta, d.x, p.x);
  }
};

template <> struct Ops<Direction::backward_filter> {
  using Perf = cudnnConvolutionBwdFilterAlgoPerf_t;
  using Algo = cudnnConvolutionBwdFilterAlgo_t;
  static constexpr int kAlgorithms = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
  static constexpr const char* kName = "cudnnConvolutionBackwardFilter";
  static cudnnStatus_t candidates(cudnnHandle_t h, const Descriptors& d, int* count, Perf* perf) {
    return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.conv, d.w, kAlgorithms, count, perf);
  }
  static cudnnStatus_t workspace(cudnnHandle_t h, const Descriptors& d, Algo algo, size_t* bytes) {
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, d.x, d.y, d.conv, d.w, algo, bytes);
  }
  static cudnnStatus_t run(cudnnHandle_t h, const Descriptors& d, Algo algo, void* ws, size_t bytes, const void* alpha,
                           const void* beta, const Pointers& p) {
    return cudnnConvolutionBackwardFilter(h, alpha, d.x, p.x, d.y, p.y, d.conv, algo, ws, bytes, beta, d.w, p.w);
  }
};

// One of cuDNN's ranked algorithms that duet may use, with its workspace and math type.
struct Candidate {
  int algo = 0;
  size_t workspace = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

// {direction, dtype, TF32, device, the shapes, the geometry}.
using CacheKey = std::array<int64_t, 18>;

// One map for every device, so it has its own mutex. An entry is read and changed only by the
// thread holding its device's cuDNN handle (the key names the device), and std::map never moves
// an entry, so the mutex guards only finding and inserting.
std::mutex& cache_mutex() {
  static std::mutex* m = new std::mutex();
  return *m;
}
std::map<CacheKey, RankedCandidates<Candidate>>& cache() {
  static auto* c = new std::map<CacheKey, RankedCandidates<Candidate>>();
  return *c;
}

std::string describe(const ConvLayout& g, DType dtype, Device device) {
  std::ostringstream out;
  out << dtype_name(dtype) << " input [" << g.batch << ", " << g.channels << ", " << g.height << ", " << g.width
      << "], weight [" << g.filters << ", " << g.group_channels() << ", " << g.kernel_h << ", " << g.kernel_w
      << "], stride " << g.stride << ", padding " << g.padding << ", dilation " << g.dilation << ", groups " << g.groups
      << " on " << device.str();
  return out.str();
}

// A fallback that changes speed, not results, said once per shape on stderr: the log is where a
// first GPU run's surprises are read.
void report(const std::string& what) { std::cerr << "duet: " << what << std::endl; }

// cuDNN's ranked candidates that are deterministic and keep TF32 out of f32 unless allowed, in
// cuDNN's order, each with its workspace under the math type it will run with. Empty when none.
template <Direction D>
std::vector<Candidate> candidates(cudnnHandle_t h, const Descriptors& d, DType dtype, bool tf32) {
  using O = Ops<D>;
  typename O::Perf perf[O::kAlgorithms];
  int count = 0;
  const cudnnStatus_t status = O::candidates(h, d, &count, perf);
  if (cudnn_not_supported(status)) return {};
  if (status != CUDNN_STATUS_SUCCESS) detail::throw_cudnn_error(status, "cudnnGet*Algorithm_v7", __FILE__, __LINE__);
  std::vector<Candidate> out;
  for (int i = 0; i < count; ++i) {
    const typename O::Perf& p = perf[i];
    if (p.status != CUDNN_STATUS_SUCCESS || p.determinism != CUDNN_DETERMINISTIC) continue;
    if (dtype == DType::f32 && !tf32 && p.mathType != CUDNN_FMA_MATH) continue;
    DUET_CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv, p.mathType));
    size_t bytes = 0;
    if (O::workspace(h, d, p.algo, &bytes) != CUDNN_STATUS_SUCCESS) continue;
    out.push_back({static_cast<int>(p.algo), bytes, p.mathType});
  }
  return out;
}

bool fits_int(const ConvLayout& g) {
  const int64_t largest =
      std::max({g.batch * g.image_size(), g.batch * g.filters * g.out_pixels(), g.filters * g.patch_size()});
  return largest <= INT_MAX;
}

constexpr const char* kCaptureRemedy =
    "cuDNN's convolution may not be recordable here; DUET_CONV_IM2COL=1 runs conv2d through im2col + cuBLAS, "
    "which records";

// Runs one candidate: Attempt::failed when cuDNN does not support it, Attempt::skipped when its
// workspace does not fit in the memory left; any other failure throws, naming the shapes. While
// a CUDA graph records the device, any failure but cuDNN's not-supported answer (given before
// anything is queued) may be the recording's doing and throws, naming DUET_CONV_IM2COL=1.
template <Direction D> Attempt attempt(cudnnHandle_t h, const Descriptors& d, const Candidate& c, const ConvLayout& g,
                                       DType dtype, const Pointers& p, Device device) {
  // Strings only on the paths that print them: this runs for every convolution.
  const auto call = [&] { return std::string(Ops<D>::kName) + " (algorithm " + std::to_string(c.algo) + ")"; };
  DUET_CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv, c.math));
  // Freed on return; the caching allocator reuses it only on this stream, after the convolution.
  Tensor workspace;
  try {
    if (c.workspace > 0) workspace = empty_contiguous({static_cast<int64_t>(c.workspace)}, DType::u8, device);
  } catch (const Error& e) {  // as PyTorch, a workspace too large for the memory left moves on
    report(call() + " for " + describe(g, dtype, device) + ": no memory for its workspace of " +
           std::to_string(c.workspace) + " bytes (" + e.what() + "); trying cuDNN's next candidate for this call");
    return Attempt::skipped;
  }
  // cuDNN's scaling factors are double for double data, float otherwise.
  const float one_f = 1, zero_f = 0;
  const double one_d = 1, zero_d = 0;
  const bool f64 = dtype == DType::f64;
  const cudnnStatus_t status = Ops<D>::run(h, d, static_cast<typename Ops<D>::Algo>(c.algo),
                                           workspace.defined() ? workspace.data_ptr() : nullptr, c.workspace,
                                           f64 ? static_cast<const void*>(&one_d) : &one_f,
                                           f64 ? static_cast<const void*>(&zero_d) : &zero_f, p);
  const bool ran = status == CUDNN_STATUS_SUCCESS;
  if (capturing(device) && !cudnn_not_supported(status))
    check_recording(device, call(), ran ? "" : cudnnGetErrorString(status), kCaptureRemedy);
  if (ran) return Attempt::ran;
  cudaGetLastError();  // a failed launch may leave a (non-sticky) CUDA error behind
  if (!cudnn_not_supported(status))
    DUET_FAIL("cuDNN error: ", call(), " failed for ", describe(g, dtype, device), ": ", cudnnGetErrorString(status));
  report(call() + " is not supported for " + describe(g, dtype, device) + " (" + cudnnGetErrorString(status) +
         "); trying cuDNN's next candidate");
  return Attempt::failed;
}

template <Direction D> bool run(const ConvLayout& g, DType dtype, const Pointers& p, Device device) {
  if (!fits_int(g)) return false;    // 4-d descriptors take int sizes and strides
  const CudnnHandle handle(device);  // held until the convolution is queued
  cudnnHandle_t h = handle.get();
  const bool tf32 = dtype == DType::f32 && allow_tf32();
  Descriptors d(g, dtype);
  // f32 asks for FMA math unless TF32 is allowed; each candidate's own math type is set before it runs.
  DUET_CUDNN_CHECK(cudnnSetConvolutionMathType(
      d.conv, dtype == DType::f32 ? (tf32 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH) : CUDNN_DEFAULT_MATH));
  const CacheKey key{static_cast<int64_t>(D),
                     static_cast<int64_t>(dtype),
                     tf32,
                     device.index,
                     g.batch,
                     g.channels,
                     g.height,
                     g.width,
                     g.filters,
                     g.kernel_h,
                     g.kernel_w,
                     g.stride.h,
                     g.stride.w,
                     g.padding.h,
                     g.padding.w,
                     g.dilation.h,
                     g.dilation.w,
                     g.groups};
  RankedCandidates<Candidate>* ranked = nullptr;
  bool searched = false;
  {
    std::lock_guard<std::mutex> cache_lock(cache_mutex());
    auto it = cache().find(key);
    if (it == cache().end()) {
      it = cache().emplace(key, RankedCandidates<Candidate>(candidates<D>(h, d, dtype, tf32))).first;
      searched = true;
    }
    ranked = &it->second;
  }
  if (searched && ranked->size() == 0)
    report(std::string(Ops<D>::kName) + " for " + describe(g, dtype, device) + ": cuDNN offers no deterministic" +
           (dtype == DType::f32 && !tf32 ? " FMA (non-TF32)" : "") + " algorithm; conv2d runs through im2col + cuBLAS");
  if (ranked->kept() == ranked->size()) return false;
  if (ranked->run([&](const Candidate& c, size_t) { return attempt<D>(h, d, c, g, dtype, p, device); })) return true;
  const bool for_good = ranked->kept() == ranked->size();
  report(std::string("none of cuDNN's ") + std::to_string(ranked->size()) + " candidates for " + Ops<D>::kName +
         " ran for " + describe(g, dtype, device) + "; conv2d runs through im2col + cuBLAS for it " +
         (for_good ? "from now on" : "this time (no memory for their workspaces)"));
  return false;
}

}  // namespace

bool cudnn_conv2d_forward(const ConvLayout& g, const Tensor& x, const Tensor& weight, const Tensor& out,
                          Device device) {
  return run<Direction::forward>(g, x.dtype(), {x.data_ptr(), weight.data_ptr(), out.data_ptr()}, device);
}

bool cudnn_conv2d_backward_input(const ConvLayout& g, const Tensor& grad_out, const Tensor& weight,
                                 const Tensor& grad_x, Device device) {
  return run<Direction::backward_data>(g, grad_x.dtype(), {grad_x.data_ptr(), weight.data_ptr(), grad_out.data_ptr()},
                                       device);
}

bool cudnn_conv2d_backward_weight(const ConvLayout& g, const Tensor& grad_out, const Tensor& x,
                                  const Tensor& grad_weight, Device device) {
  return run<Direction::backward_filter>(g, x.dtype(), {x.data_ptr(), grad_weight.data_ptr(), grad_out.data_ptr()},
                                         device);
}

}  // namespace duet::cuda
