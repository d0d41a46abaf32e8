// Same-device copy (strided, broadcasting, casting) and where() on CUDA: kernels that move
// values rather than compute them. Casts go through kernels/cast.h, as on the CPU.
#include <cstdint>

#include "duet/kernels/cast.h"
#include "duet/kernels/cuda/copy_plan.h"
#include "duet/kernels/cuda/elementwise.cuh"
#include "duet/kernels/cuda/launchers.h"
#include "duet/kernels/dtype_checks.h"

namespace duet::cuda {
namespace {

template <class D, class S> struct CastCopy {
  D* dst;
  const S* src;
  __device__ void operator()(const Offsets<2>& o) const { dst[o.v[0]] = kernels::cast_value<D>(src[o.v[1]]); }
};

template <class T> struct Where {
  T* out;
  const uint8_t* cond;
  const T* a;
  const T* b;
  __device__ void operator()(const Offsets<4>& o) const { out[o.v[0]] = cond[o.v[1]] ? a[o.v[2]] : b[o.v[3]]; }
};

}  // namespace

void launch_copy(const Tensor& src, const Tensor& dst, cudaStream_t stream) {
  if (src.dtype() == dst.dtype() && src.sizes() == dst.sizes() && src.is_contiguous() && dst.is_contiguous()) {
    // One dense block: the copy engine does it, with the CPU's memmove result (copy_plan.h).
    const size_t bytes = static_cast<size_t>(dst.numel()) * dst.element_size();
    switch (plan_dense_copy(reinterpret_cast<std::uintptr_t>(dst.data_ptr()),
                            reinterpret_cast<std::uintptr_t>(src.data_ptr()), bytes)) {
      case DenseCopy::none:
        return;
      case DenseCopy::direct:
        DUET_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), bytes, cudaMemcpyDeviceToDevice, stream));
        return;
      case DenseCopy::staged: {
        // Freed on return; the caching allocator reuses it only on this stream, after both copies.
        const Tensor scratch = empty_contiguous({static_cast<int64_t>(bytes)}, DType::u8, dst.device());
        DUET_CUDA_CHECK(cudaMemcpyAsync(scratch.data_ptr(), src.data_ptr(), bytes, cudaMemcpyDeviceToDevice, stream));
        DUET_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), scratch.data_ptr(), bytes, cudaMemcpyDeviceToDevice, stream));
        return;
      }
    }
  }
  dispatch_dtype(dst.dtype(), [&]<class D>() {
    dispatch_dtype(src.dtype(), [&]<class S>() {
      launch_elementwise<2>("copy", {&dst, &src}, CastCopy<D, S>{dst.data<D>(), src.data<S>()}, stream);
    });
  });
}

void launch_where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out, cudaStream_t stream) {
  kernels::check_same_dtype("where", a, b);
  dispatch_dtype(out.dtype(), [&]<class T>() {
    launch_elementwise<4>("where", {&out, &cond, &a, &b},
                          Where<T>{out.data<T>(), cond.data<uint8_t>(), a.data<T>(), b.data<T>()}, stream);
  });
}

}  // namespace duet::cuda
