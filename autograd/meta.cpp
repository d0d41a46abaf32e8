#include "duet/autograd/meta.h"

namespace duet::autograd {

AutogradMeta* meta(const Tensor& t) { return t.impl().autograd.get(); }

AutogradMeta& ensure_meta(const Tensor& t) {
  auto& slot = t.impl().autograd;
  if (!slot) slot = std::make_shared<AutogradMeta>();
  return *slot;
}

}  // namespace duet::autograd
