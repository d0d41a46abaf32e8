// The NN kernels' operand contract (nn_kernels.h), checked on the host before any CUDA launch:
// a caller's mistake throws instead of reading or writing out of bounds on the device.
#pragma once

#include <initializer_list>

#include "duet/core/error.h"
#include "duet/core/tensor.h"

namespace duet::cuda {

// Contiguous operands, the floating ones of one dtype; undefined (optional) ones are skipped.
// Returns the shared floating dtype.
inline DType check_nn_operands(const char* op, std::initializer_list<Tensor> floating) {
  const Tensor* first = nullptr;
  for (const Tensor& t : floating) {
    if (!t.defined()) continue;
    DUET_CHECK(t.is_contiguous(), op, ": the CUDA kernel expects contiguous operands, got a strided ", t.describe());
    if (!first) first = &t;
    DUET_CHECK(t.dtype() == first->dtype(), op, ": operands of different dtypes: ", first->describe(), " and ",
               t.describe());
  }
  DUET_CHECK(first != nullptr, op, ": no operand given");
  DUET_CHECK(is_floating(first->dtype()), op, ": expected a floating dtype (f32 or f64), got ", first->describe());
  return first->dtype();
}

// An index operand (max-pool positions, class targets): contiguous i64.
inline void check_index_operand(const char* op, const Tensor& t) {
  DUET_CHECK(t.defined() && t.dtype() == DType::i64 && t.is_contiguous(), op,
             ": expected a contiguous i64 index tensor, got ", t.defined() ? t.describe() : "an undefined tensor");
}

template <class T>
T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

}  // namespace duet::cuda
