// Fused cross-entropy on CUDA: a log-softmax per row (softmax_rows.cuh) and the picked negative
// log-probability; the backward pass is elementwise.
//
// The targets are checked on the device without waiting for the answer (bad_label.h): one block
// finds the first target outside [0, classes) and writes it into page-locked host memory, which
// the host reads once it has waited for the device anyway. The forward pass checks; the backward
// pass gets the same targets (autograd saves them) and only guards. Neither kernel reads outside
// a row for a bad target: its loss is NaN and its gradient row zero. The check needs no wait, so
// a CUDA graph records it like any other kernel.
#include <atomic>
#include <cmath>
#include <cstring>
#include <mutex>

#include "duet/kernels/cuda/bad_label.h"
#include "duet/kernels/cuda/check.h"
#include "duet/kernels/cuda/elementwise.cuh"
#include "duet/kernels/cuda/nn_launchers.h"
#include "duet/kernels/cuda/softmax_rows.cuh"

namespace duet::cuda {
namespace {

// The first bad target a check found on one logical device, in host memory mapped into the
// device's address space. `found` is set last, so a record with found == 1 is complete.
struct BadLabel {
  int64_t index;
  int64_t value;
  int64_t classes;
  int32_t found;
};

// One record per logical device, made on first use and never freed (like the streams).
std::atomic<BadLabel*> records{nullptr};

BadLabel* records_for_kernels() {
  static std::once_flag made;
  std::call_once(made, [] {
    void* host = nullptr;
    // Portable: valid in every device's context. Mapped: kernels write it directly. Under
    // unified addressing (every 64-bit platform) the host pointer is the device pointer.
    DUET_CUDA_CHECK(cudaHostAlloc(&host, sizeof(BadLabel) * kMaxDevicesPerType,
                                  cudaHostAllocPortable | cudaHostAllocMapped));
    std::memset(host, 0, sizeof(BadLabel) * kMaxDevicesPerType);
    void* device = nullptr;
    DUET_CUDA_CHECK(cudaHostGetDevicePointer(&device, host, 0));
    DUET_CHECK(device == host, "cross_entropy: mapped host memory has another address on the device; duet needs "
               "unified addressing");
    records.store(static_cast<BadLabel*>(host));
  });
  return records.load();
}

struct MinOf {
  __device__ int64_t operator()(int64_t a, int64_t b) const { return a < b ? a : b; }
};

// Records the first target outside [0, classes) unless an earlier call's bad target waits to be
// reported (calls on one stream run in order, so the earliest is kept).
__global__ void find_bad_target_kernel(const int64_t* target, int64_t n, int64_t classes, BadLabel* record) {
  int64_t first = n;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    if ((target[i] < 0 || target[i] >= classes) && i < first) first = i;
  }
  first = block_reduce(first, MinOf{});
  if (threadIdx.x == 0 && first < n && !record->found) {
    record->index = first;
    record->value = target[first];
    record->classes = classes;
    __threadfence_system();  // the fields before the flag, as the host sees them
    record->found = 1;
  }
}

void check_targets(const Tensor& target, int64_t classes, cudaStream_t stream) {
  const int64_t n = target.numel();
  if (n == 0) return;
  BadLabel* record = records_for_kernels() + target.device().index;
  find_bad_target_kernel<<<1, kMaxReduceThreads, 0, stream>>>(target.data<int64_t>(), n, classes, record);
  DUET_CUDA_CHECK_LAUNCH();
}

__device__ bool in_range(int64_t target, int64_t classes) { return target >= 0 && target < classes; }

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
    const int64_t t = target[row];
    if (threadIdx.x == 0) losses[row] = in_range(t, classes) ? -log_softmax_value(xr[t], stats) : T(NAN);
  }
};

// grad_logits[i, j] = g[i] * exp(lp[i, j]), minus g[i] at j = target[i]; zero for a bad target.
template <class T>
struct Backward {
  const T* g;
  const T* log_probs;
  const int64_t* target;
  T* grad;
  int64_t classes;
  __device__ void operator()(int64_t i) const {
    const int64_t row = i / classes, j = i % classes, t = target[row];
    const T v = g[row] * std::exp(log_probs[i]);
    grad[i] = !in_range(t, classes) ? T(0) : j == t ? v - g[row] : v;
  }
};

}  // namespace

void raise_bad_label(Device device) {
  BadLabel* all = records.load();
  if (!all || !device.is_cuda()) return;
  BadLabel& record = all[device.index];
  if (std::atomic_ref<int32_t>(record.found).load() == 0) return;
  const int64_t index = record.index, value = record.value, classes = record.classes;
  std::atomic_ref<int32_t>(record.found).store(0);
  DUET_FAIL("cross_entropy_forward: target[", index, "] = ", value, " is out of range for ", classes,
            " classes (expected 0 <= target < ", classes, ")");
}

void launch_cross_entropy_forward(const Tensor& logits, const Tensor& target, const Tensor& losses,
                                  const Tensor& log_probs, cudaStream_t stream) {
  const char* op = "cross_entropy_forward";
  const int64_t classes = logits.size(1);
  check_targets(target, classes, stream);
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
  if (log_probs.numel() == 0) return;
  dispatch_floating(log_probs.dtype(), op, [&]<class T>() {
    launch_indexed(log_probs.numel(),
                   Backward<T>{grad_losses.data<T>(), log_probs.data<T>(), target.data<int64_t>(),
                               grad_logits.data<T>(), classes},
                   stream);
  });
}

}  // namespace duet::cuda
