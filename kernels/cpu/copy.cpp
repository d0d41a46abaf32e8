// copy(): dst = src, broadcasting src and converting its dtype.
#include <cstring>

#include "duet/kernels/cast.h"
#include "duet/kernels/cpu/cpu_backend.h"
#include "duet/kernels/cpu/strided_loop.h"

namespace duet::kernels::cpu {

void copy(const Tensor& src, const Tensor& dst) {
  if (src.dtype() == dst.dtype() && src.sizes() == dst.sizes() && src.is_contiguous() && dst.is_contiguous()) {
    // memmove: a copy onto itself (or an overlapping view) stays defined.
    std::memmove(dst.data_ptr(), src.data_ptr(), static_cast<size_t>(dst.numel()) * dst.element_size());
    return;
  }
  dispatch_dtype(dst.dtype(), [&]<class D>() {
    dispatch_dtype(src.dtype(), [&]<class S>() {
      map_elementwise<D, S>(
          "copy", [](S v) { return cast_value<D>(v); }, dst, src);
    });
  });
}

}  // namespace duet::kernels::cpu
