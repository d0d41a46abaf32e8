// fill() and arange(): outputs written from a formula, no inputs.
#include "duet/kernels/cast.h"
#include "duet/kernels/cpu/cpu_backend.h"
#include "duet/kernels/cpu/strided_loop.h"

namespace duet::kernels::cpu {

void fill(const Tensor& out, double value) {
  dispatch_dtype(out.dtype(), [&]<class T>() {
    const T v = cast_value<T>(value);
    map_elementwise<T>(
        "fill", [v]() { return v; }, out);
  });
}

void arange(const Tensor& out, double start, double step) {
  DUET_CHECK(out.dim() == 1, "arange: expected a 1-D output, got ", out.describe());
  dispatch_dtype(out.dtype(), [&]<class T>() {
    T* data = out.data<T>();
    const int64_t stride = out.stride(0);
    parallel_for(out.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) data[i * stride] = cast_value<T>(start + static_cast<double>(i) * step);
    });
  });
}

}  // namespace duet::kernels::cpu
