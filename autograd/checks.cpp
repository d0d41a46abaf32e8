#include "duet/autograd/checks.h"

#include "duet/core/error.h"

namespace duet::autograd {

void check_defined(const char* op, const Tensor& t) { DUET_CHECK(t.defined(), op, ": got an undefined tensor"); }

void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  check_defined(op, a);
  check_defined(op, b);
  DUET_CHECK(a.device() == b.device(), op, ": tensors on different devices: ", a.describe(), " and ", b.describe(),
             " (move one with .to(device) first)");
}

void check_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  check_defined(op, a);
  check_defined(op, b);
  DUET_CHECK(a.dtype() == b.dtype(), op, ": tensors of different dtypes: ", a.describe(), " and ", b.describe(),
             " (convert one with .to(dtype) first)");
}

void check_compatible(const char* op, const Tensor& a, const Tensor& b) {
  check_same_device(op, a, b);
  check_same_dtype(op, a, b);
}

void check_compatible(const char* op, const std::vector<Tensor>& tensors) {
  DUET_CHECK(!tensors.empty(), op, ": expected a non-empty list of tensors");
  for (size_t i = 0; i < tensors.size(); ++i) {
    DUET_CHECK(tensors[i].defined(), op, ": tensor ", i, " is undefined");
    if (i == 0) continue;
    DUET_CHECK(tensors[i].device() == tensors[0].device(), op, ": tensors on different devices: tensor 0 is ",
               tensors[0].describe(), " but tensor ", i, " is ", tensors[i].describe());
    DUET_CHECK(tensors[i].dtype() == tensors[0].dtype(), op, ": tensors of different dtypes: tensor 0 is ",
               tensors[0].describe(), " but tensor ", i, " is ", tensors[i].describe());
  }
}

void check_floating(const char* op, const Tensor& t) {
  check_defined(op, t);
  DUET_CHECK(is_floating(t.dtype()), op, ": expected a floating dtype (f32 or f64), got ", t.describe());
}

}  // namespace duet::autograd
