#include "duet/kernels/cpu/strided_loop.h"

namespace duet::kernels::cpu {

Shape broadcast_byte_strides(const Tensor& t, const Shape& sizes, const char* op) {
  const size_t nd = sizes.size(), td = t.sizes().size();
  DUET_CHECK(td <= nd, op, ": ", t.describe(), " does not broadcast to ", shape_str(sizes));
  const auto elem = static_cast<int64_t>(t.element_size());
  Shape strides(nd, 0);
  for (size_t i = 0; i < td; ++i) {
    size_t d = nd - td + i;
    int64_t size = t.sizes()[i];
    DUET_CHECK(size == sizes[d] || size == 1, op, ": ", t.describe(), " does not broadcast to ", shape_str(sizes),
               " (dim ", d, ": ", size, " vs ", sizes[d], ")");
    if (size == sizes[d]) strides[d] = t.strides()[i] * elem;
  }
  return strides;
}

}  // namespace duet::kernels::cpu
