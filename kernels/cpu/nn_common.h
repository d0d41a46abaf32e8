// What the CPU NN kernels share: the operand guard and the loop grain.
#pragma once

#include <initializer_list>

#include "duet/core/error.h"
#include "duet/core/tensor.h"

namespace duet::kernels::cpu {

// Work items (multiply-adds, elements) per parallel chunk below which a thread hand-off costs
// more than it saves.
inline constexpr int64_t kNnGrainWork = 32768;

// Chunks of `items`, each costing `work_per_item`, so that one chunk holds about kNnGrainWork.
inline int64_t grain_for(int64_t work_per_item) {
  return work_per_item >= kNnGrainWork ? 1 : kNnGrainWork / (work_per_item > 0 ? work_per_item : 1);
}

// The NN kernels' contract (nn_kernels.h): contiguous operands, the floating ones of one dtype.
// Undefined tensors (optional operands) are skipped. Returns the shared floating dtype.
inline DType check_nn_operands(const char* op, std::initializer_list<Tensor> floating) {
  const Tensor* first = nullptr;
  for (const Tensor& t : floating) {
    if (!t.defined()) continue;
    DUET_CHECK(t.is_contiguous(), op, ": the CPU kernel expects contiguous operands, got a strided ",
               t.describe());
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

// data<T>() of an optional operand: null when undefined.
template <class T>
T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

}  // namespace duet::kernels::cpu
