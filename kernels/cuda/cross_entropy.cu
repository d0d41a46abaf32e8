// Fused cross-entropy on CUDA: a log-softmax per row (softmax_rows.cuh) and the picked negative
// log-probability; the backward pass is elementwise.
//
// The targets are checked on the device first: one block finds the first target outside
// [0, classes) and the host waits for its answer, so a bad target throws the CPU's error (with
// its index) instead of reading out of bounds. That costs one stream synchronisation per call.
// While a CUDA graph records the device the check is skipped (a recording cannot wait): whoever
// replays the graph checks the labels on the host (parallel::GraphedSingleDevice does).
#include "duet/kernels/cuda/elementwise.cuh"
#include "duet/kernels/cuda/graph.h"
#include "duet/kernels/cuda/nn_launchers.h"
#include "duet/kernels/cuda/softmax_rows.cuh"

namespace duet::cuda {
namespace {

struct MinOf {
  __device__ int64_t operator()(int64_t a, int64_t b) const { return a < b ? a : b; }
};

// found[0] = the index of the first bad target (n when none), found[1] = its value.
__global__ void find_bad_target_kernel(const int64_t* target, int64_t n, int64_t classes, int64_t* found) {
  int64_t first = n;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    if ((target[i] < 0 || target[i] >= classes) && i < first) first = i;
  }
  first = block_reduce(first, MinOf{});
  if (threadIdx.x == 0) {
    found[0] = first;
    found[1] = first < n ? target[first] : 0;
  }
}

void check_targets(const char* op, const Tensor& target, int64_t classes, cudaStream_t stream) {
  const int64_t n = target.numel();
  if (n == 0 || capturing(target.device())) return;
  Tensor found = empty_contiguous({2}, DType::i64, target.device());
  find_bad_target_kernel<<<1, kMaxReduceThreads, 0, stream>>>(target.data<int64_t>(), n, classes,
                                                               found.data<int64_t>());
  DUET_CUDA_CHECK_LAUNCH();
  int64_t host[2] = {n, 0};
  DUET_CUDA_CHECK(cudaMemcpyAsync(host, found.data<int64_t>(), sizeof(host), cudaMemcpyDeviceToHost, stream));
  DUET_CUDA_CHECK(cudaStreamSynchronize(stream));
  DUET_CHECK(host[0] >= n, op, ": target[", host[0], "] = ", host[1], " is out of range for ", classes,
             " classes (expected 0 <= target < ", classes, ")");
}

template <class T>
struct ForwardRow {
  const T* x;
  const int64_t* target;
  T* log_probs;
  T* losses;
  int64_t classes;
  __device__ void operator()(int64_t row) const {
    const T* xr = x + row * classes;
    T* lp = log_probs + row * classes;
    const RowStats<T> stats = row_stats(xr, classes, 1);
    for (int64_t j = threadIdx.x; j < classes; j += blockDim.x) lp[j] = log_softmax_value(xr[j], stats);
    if (threadIdx.x == 0) losses[row] = -log_softmax_value(xr[target[row]], stats);
  }
};

// grad_logits[i, j] = g[i] * exp(lp[i, j]), minus g[i] at j = target[i].
template <class T>
struct Backward {
  const T* g;
  const T* log_probs;
  const int64_t* target;
  T* grad;
  int64_t classes;
  __device__ void operator()(int64_t i) const {
    const int64_t row = i / classes, j = i % classes;
    const T v = g[row] * std::exp(log_probs[i]);
    grad[i] = j == target[row] ? v - g[row] : v;
  }
};

}  // namespace

void launch_cross_entropy_forward(const Tensor& logits, const Tensor& target, const Tensor& losses,
                                  const Tensor& log_probs, cudaStream_t stream) {
  const char* op = "cross_entropy_forward";
  const int64_t classes = logits.size(1);
  check_targets(op, target, classes, stream);
  if (logits.numel() == 0) return;
  dispatch_floating(logits.dtype(), op, [&]<class T>() {
    launch_per_row(logits.size(0), classes,
                   ForwardRow<T>{logits.data<T>(), target.data<int64_t>(), log_probs.data<T>(), losses.data<T>(),
                                 classes},
                   stream);
  });
}

void launch_cross_entropy_backward(const Tensor& grad_losses, const Tensor& log_probs, const Tensor& target,
                                   const Tensor& grad_logits, cudaStream_t stream) {
  const char* op = "cross_entropy_backward";
  const int64_t classes = log_probs.size(1);
  check_targets(op, target, classes, stream);
  if (log_probs.numel() == 0) return;
  dispatch_floating(log_probs.dtype(), op, [&]<class T>() {
    launch_indexed(log_probs.numel(),
                   Backward<T>{grad_losses.data<T>(), log_probs.data<T>(), target.data<int64_t>(),
                               grad_logits.data<T>(), classes},
                   stream);
  });
}

}  // namespace duet::cuda
