// Cross-device copies move one dense block of bytes with cudaMemcpyAsync. Everything else
// (strides, broadcasting, dtype conversion) is done by a same-device copy: on the source side
// before the transfer when src is not already dense in dst's dtype and shape, and on the
// destination side after it when dst is not dense.
#include "duet/kernels/cuda/cross_device_copy.h"

#include <memory>

#include "duet/kernels/backend.h"
#include "duet/kernels/cuda/bad_label.h"
#include "duet/kernels/cuda/check.h"
#include "duet/kernels/cuda/device.h"
#include "duet/kernels/cuda/graph.h"
#include "duet/kernels/cuda/pinned_allocator.h"

namespace duet::cuda {
namespace {

void same_device_copy(const Tensor& src, const Tensor& dst) {
  kernels::backend_for(dst.device(), "copy").copy(src, dst);
}

// src's elements as a dense tensor of dst's dtype and shape, on src's device.
Tensor dense_like(const Tensor& src, const Tensor& dst) {
  if (src.dtype() == dst.dtype() && src.sizes() == dst.sizes() && src.is_contiguous()) return src;
  Tensor dense = empty_contiguous(dst.sizes(), dst.dtype(), src.device());
  same_device_copy(src, dense);
  return dense;
}

// Both dense with the same byte size. The copy is queued on the CUDA side's stream, so it runs
// after the kernels already queued there and before those queued later. It is waited for,
// except from pinned host memory to a GPU: that copy runs while the host goes on, and the
// pinned allocator keeps the source block from being reused or rewritten until it is done.
void copy_bytes(const Tensor& src, const Tensor& dst) {
  size_t bytes = static_cast<size_t>(dst.numel()) * dst.element_size();
  if (src.device().is_cuda() && dst.device().is_cuda() && src.device() != dst.device()) {
    // The source's pending writes are on its own stream: finish them before dst's stream reads.
    DeviceGuard guard(src.device());
    DUET_CUDA_CHECK(cudaStreamSynchronize(stream(src.device())));
    raise_bad_label(src.device());
  }
  Device gpu = dst.device().is_cuda() ? dst.device() : src.device();
  DeviceGuard guard(gpu);
  cudaStream_t s = stream(gpu);
  const bool from_pinned = src.device().is_cpu() && src.is_pinned();
  // Not into another thread's recording of the GPU (graph.h): a loader's copy waits for its end.
  outside_recording(gpu, [&] {
    // cudaMemcpyDefault: unified addressing tells host from device memory, and copies between
    // two GPUs go peer-to-peer or through the host as the driver sees fit.
    DUET_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), bytes, cudaMemcpyDefault, s));
    if (from_pinned) record_pinned_read(src.storage()->data(), gpu);
    else DUET_CUDA_CHECK(cudaStreamSynchronize(s));
  });
  if (from_pinned) return;
  // Reading a GPU's results (a loss's item()) is where a bad label its cross-entropy found is
  // reported (bad_label.h). A copy to a GPU waited only for its own transfer.
  if (src.device().is_cuda()) raise_bad_label(src.device());
}

}  // namespace

void copy_across_devices(const Tensor& src, const Tensor& dst) {
  if (dst.numel() == 0) return;
  if (src.device() == dst.device()) {
    same_device_copy(src, dst);
    return;
  }
  Tensor dense_src = dense_like(src, dst);
  if (dst.is_contiguous()) {
    copy_bytes(dense_src, dst);
    return;
  }
  Tensor staged = empty_contiguous(dst.sizes(), dst.dtype(), dst.device());
  copy_bytes(dense_src, staged);
  same_device_copy(staged, dst);
}

namespace {
// Registered at load time; no CUDA call happens until a copy runs.
[[maybe_unused]] const bool cross_device_copy_registered = [] {
  kernels::register_cross_device_copy(&copy_across_devices);
  return true;
}();
}  // namespace

}  // namespace duet::cuda
