// FusedSequential: a Sequential's modules, run with two fusions of pooled activation maps.
#pragma once

#include "duet/nn/layers.h"

namespace duet::nn {

// Runs the modules of a Sequential in order, as Sequential does, except where two patterns
// meet; these run as one op each, with the results of the modules one by one up to rounding:
// - Conv2d, an activation (ReLU, Sigmoid, Tanh) and AvgPool2d, where the convolution is cheap to
//   compute again in the backward (at most kMaxRecomputedMacs multiply-adds per output:
//   in_channels / groups x kernel_h x kernel_w), run as functional::conv2d_activated_avg_pool2d.
//   The convolution's output map is then never stored.
// - else an activation followed by AvgPool2d runs as functional::activated_avg_pool2d, so the
//   activation's output map is never written (for ReLU, the same bits as the two modules).
// docs/conv-and-pooling.md says why these pay. Fusion is a choice made here, never behind the
// user's back: nn::Sequential runs its modules one by one and nothing else. The modules keep the
// Sequential's names ("0.weight"), so a state dict of one loads into the other; to see the maps in
// between, call the modules one by one ((*net)[i].forward(x)).
class FusedSequentialImpl final : public Cloneable<FusedSequentialImpl> {
 public:
  explicit FusedSequentialImpl(const Sequential& layers);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "FusedSequential"; }
  size_t size() const { return num_children(); }
  Module& operator[](size_t i) const { return child(i); }
  static constexpr int64_t kMaxRecomputedMacs = 16;
};
DUET_MODULE(FusedSequential);

}  // namespace duet::nn
