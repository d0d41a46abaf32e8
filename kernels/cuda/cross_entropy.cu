// Fused cross-entropy on CUDA: a log-softmax per row (softmax_rows.cuh) and the row's loss
// (kernels/cross_entropy_math.h, the CPU's math); the backward pass is elementwise, or one block
// per row where class weights and label smoothing both need the weights' sum. Rows are those of
// RowLayout of dim 1, so [N, C, d1, ...] logits are rows of C scores `inner` elements apart.
//
// The targets are checked on the device without waiting for the answer (bad_label.h): blocks
// each find their first target that is neither a class in [0, classes) nor ignore_index and sum
// their rows' weights, then one block combines those partials (in block order, so the sum is
// the same run after run), writes the first bad target into page-locked host memory, which the
// host reads once it has waited for the device anyway, and the weights' sum into total_weight. The forward pass checks;
// the backward pass gets the same targets (autograd saves them) and only guards. Neither kernel reads outside a row for
// a bad target: its loss is NaN and its gradient row zero. The check needs no wait, so a CUDA graph records it like any
// other kernel.
#include <atomic>
#include <cmath>
#include <cstring>
#include <mutex>

#include "duet/kernels/cross_entropy_math.h"
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
  int64_t ignore_index;
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
    DUET_CUDA_CHECK(
        cudaHostAlloc(&host, sizeof(BadLabel) * kMaxDevicesPerType, cudaHostAllocPortable | cudaHostAllocMapped));
    std::memset(host, 0, sizeof(BadLabel) * kMaxDevicesPerType);
    void* device = nullptr;
    DUET_CUDA_CHECK(cudaHostGetDevicePointer(&device, host, 0));
    DUET_CHECK(device == host,
               "cross_entropy: mapped host memory has another address on the device; duet needs "
               "unified addressing");
    records.store(static_cast<BadLabel*>(host));
  });
  return records.load();
}

struct MinOf {
  __device__ int64_t operator()(int64_t a, int64_t b) const { return a < b ? a : b; }
};

// Block b's first bad target (n if none) and the sum of its rows' weights, over a grid-stride
// share of the targets.
template <class T> __global__ void scan_targets_kernel(const int64_t* target, int64_t n,
                                                       kernels::CrossEntropyMath<T> math, int64_t* block_first,
                                                       double* block_total) {
  int64_t first = n;
  double total = 0;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t t = target[i];
    if (!math.bad(t)) total += static_cast<double>(math.row_weight(t));
    else if (i < first) first = i;
  }
  first = block_reduce(first, MinOf{});
  total = block_reduce(total, SumOf<double>{});
  if (threadIdx.x != 0) return;
  block_first[blockIdx.x] = first;
  block_total[blockIdx.x] = total;
}

// Combines the blocks' partials. Records the first bad target unless an earlier call's bad
// target waits to be reported (calls on one stream run in order, so the earliest is kept), and
// writes the sum of the rows' weights.
template <class T> __global__ void combine_targets_kernel(const int64_t* target, int64_t n, int blocks,
                                                          kernels::CrossEntropyMath<T> math, const int64_t* block_first,
                                                          const double* block_total, BadLabel* record,
                                                          T* total_weight) {
  int64_t first = n;
  double total = 0;
  for (int b = threadIdx.x; b < blocks; b += blockDim.x) {
    first = block_first[b] < first ? block_first[b] : first;
    total += block_total[b];
  }
  first = block_reduce(first, MinOf{});
  total = block_reduce(total, SumOf<double>{});
  if (threadIdx.x != 0) return;
  *total_weight = static_cast<T>(total);
  if (first < n && !record->found) {
    record->index = first;
    record->value = target[first];
    record->classes = math.classes;
    record->ignore_index = math.ignore_index;
    __threadfence_system();  // the fields before the flag, as the host sees them
    record->found = 1;
  }
}

template <class T> void scan_targets(const Tensor& target, const kernels::CrossEntropyMath<T>& math,
                                     const Tensor& total_weight, cudaStream_t stream) {
  BadLabel* record = records_for_kernels() + target.device().index;
  const int64_t n = target.numel();
  const int blocks = target_check_blocks(n);
  // Freed on return; the caching allocator reuses it only on this stream, after both kernels.
  const Tensor partials = empty_contiguous({2 * blocks}, DType::i64, target.device());
  int64_t* block_first = partials.data<int64_t>();
  double* block_total = reinterpret_cast<double*>(block_first + blocks);
  scan_targets_kernel<<<blocks, kMaxReduceThreads, 0, stream>>>(target.data<int64_t>(), n, math, block_first,
                                                                block_total);
  DUET_CUDA_CHECK_LAUNCH();
  combine_targets_kernel<<<1, kMaxReduceThreads, 0, stream>>>(target.data<int64_t>(), n, blocks, math, block_first,
                                                              block_total, record, total_weight.data<T>());
  DUET_CUDA_CHECK_LAUNCH();
}

template <class T> struct ForwardRow {
  const T* x;
  const int64_t* target;
  T* log_probs;
  T* losses;
  kernels::RowLayout layout;
  kernels::CrossEntropyMath<T> math;
  __device__ void operator()(int64_t row) const {
    const int64_t classes = layout.size, stride = layout.inner, offset = layout.offset(row);
    const T* xr = x + offset;
    T* lp = log_probs + offset;
    const RowStats<T> stats = row_stats(xr, classes, stride);
    for (int64_t j = threadIdx.x; j < classes; j += blockDim.x)
      lp[j * stride] = log_softmax_value(xr[j * stride], stats);
    const int64_t t = target[row];  // the same in every thread: the branches below are the block's
    if (math.ignored(t)) {
      if (threadIdx.x == 0) losses[row] = T(0);
      return;
    }
    double smooth = 0;  // sum_c w[c] * -lp[c], only when smoothing
    if (math.smoothing) {
      for (int64_t j = threadIdx.x; j < classes; j += blockDim.x) {
        smooth -= static_cast<double>(math.class_weight(j)) * static_cast<double>(lp[j * stride]);
      }
      smooth = block_reduce(smooth, SumOf<double>{});
    }
    if (threadIdx.x == 0) {
      losses[row] = math.bad(t) ? T(NAN) : math.loss(t, -log_softmax_value(xr[t * stride], stats), T(smooth));
    }
  }
};

// The gradient of logit j of one row; zero in an ignored row or one with a bad target.
template <class T> struct BackwardMath {
  const T* g;
  const T* log_probs;
  const int64_t* target;
  T* grad;
  kernels::RowLayout layout;
  kernels::CrossEntropyMath<T> math;
  __device__ void write(int64_t row, int64_t j, T weight_sum) const {
    const int64_t t = target[row], i = layout.offset(row) + j * layout.inner;
    if (math.ignored(t) || math.bad(t)) {
      grad[i] = T(0);
      return;
    }
    grad[i] = math.grad(g[row], std::exp(log_probs[i]), j, t, math.row_grad(t, weight_sum));
  }
};

// One thread per element; the weights' sum, where needed, is C.
template <class T> struct Backward {
  BackwardMath<T> b;
  __device__ void operator()(int64_t i) const {
    const kernels::RowLayout& l = b.layout;
    const int64_t row = (i / (l.size * l.inner)) * l.inner + i % l.inner, j = (i / l.inner) % l.size;
    b.write(row, j, b.math.unweighted_sum());
  }
};

// One block per row, which first sums the class weights (weights and smoothing both set).
template <class T> struct BackwardRow {
  BackwardMath<T> b;
  __device__ void operator()(int64_t row) const {
    const int64_t classes = b.layout.size;
    double sum = 0;
    for (int64_t j = threadIdx.x; j < classes; j += blockDim.x) sum += static_cast<double>(b.math.class_weight(j));
    const T weight_sum = static_cast<T>(block_reduce(sum, SumOf<double>{}));
    for (int64_t j = threadIdx.x; j < classes; j += blockDim.x) b.write(row, j, weight_sum);
  }
};

}  // namespace

void raise_bad_label(Device device) {
  BadLabel* all = records.load();
  if (!all || !device.is_cuda()) return;
  BadLabel& record = all[device.index];
  if (std::atomic_ref<int32_t>(record.found).load() == 0) return;
  const int64_t index = record.index, value = record.value, classes = record.classes;
  const int64_t ignore_index = record.ignore_index;
  std::atomic_ref<int32_t>(record.found).store(0);
  DUET_FAIL("cross_entropy_forward: target[", index, "] = ", value, " is out of range for ", classes,
            " classes (expected 0 <= target < ", classes, ", or ignore_index ", ignore_index, ")");
}

void launch_cross_entropy_forward(const Tensor& logits, const Tensor& target, const Tensor& weight,
                                  const kernels::CrossEntropyTerms& terms, const Tensor& losses,
                                  const Tensor& log_probs, const Tensor& total_weight, cudaStream_t stream) {
  const char* op = "cross_entropy_forward";
  const kernels::RowLayout layout = kernels::RowLayout::of(logits, 1);
  dispatch_floating(logits.dtype(), op, [&]<class T>() {
    const kernels::CrossEntropyMath<T> math(kernels::data_or_null<T>(weight), layout.size, terms);
    scan_targets(target, math, total_weight, stream);
    if (logits.numel() == 0) return;
    launch_per_row(
        layout.rows(), layout.size,
        ForwardRow<T>{logits.data<T>(), target.data<int64_t>(), log_probs.data<T>(), losses.data<T>(), layout, math},
        stream);
  });
}

void launch_cross_entropy_backward(const Tensor& grad_losses, const Tensor& log_probs, const Tensor& target,
                                   const Tensor& weight, const kernels::CrossEntropyTerms& terms,
                                   const Tensor& grad_logits, cudaStream_t stream) {
  const char* op = "cross_entropy_backward";
  if (log_probs.numel() == 0) return;
  const kernels::RowLayout layout = kernels::RowLayout::of(log_probs, 1);
  dispatch_floating(log_probs.dtype(), op, [&]<class T>() {
    const kernels::CrossEntropyMath<T> math(kernels::data_or_null<T>(weight), layout.size, terms);
    const BackwardMath<T> b{
        grad_losses.data<T>(), log_probs.data<T>(), target.data<int64_t>(), grad_logits.data<T>(), layout, math};
    if (weight.defined() && math.smoothing) launch_per_row(layout.rows(), layout.size, BackwardRow<T>{b}, stream);
    else launch_indexed(log_probs.numel(), Backward<T>{b}, stream);
  });
}

}  // namespace duet::cuda
