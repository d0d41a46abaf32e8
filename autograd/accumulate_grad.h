// AccumulateGrad: the sink node of a leaf. backward ends here and adds into leaf.grad.
#pragma once

#include <memory>

#include "duet/autograd/node.h"

namespace duet::autograd {

class AccumulateGrad final : public Node {
 public:
  // Holds the leaf strongly; the leaf holds this node only weakly (no cycle).
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> leaf) : leaf_(std::move(leaf)) {
    set_device(leaf_->storage->device());  // runs where the leaf lives
  }
  TensorList apply(TensorList&& grads) override;
  std::string name() const override { return "AccumulateGrad"; }

 private:
  std::shared_ptr<TensorImpl> leaf_;
};

}  // namespace duet::autograd
