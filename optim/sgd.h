// Stochastic gradient descent, with PyTorch's semantics for momentum, dampening, weight decay
// and Nesterov momentum.
#pragma once

#include "duet/optim/optimizer.h"

namespace duet::optim {

struct SGDOptions {
  double lr = 0.01;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
  bool maximize = false;  // ascend the objective, as torch.optim's maximize=True
};

class SGD final : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, SGDOptions options);
  void step() override;
  bool replayable() const override { return true; }  // its kernel arguments change only with lr
  std::vector<std::string> buffer_names() const override;
  std::unique_ptr<Optimizer> make_like(std::vector<Tensor> params) const override;
  const SGDOptions& options() const { return options_; }

 private:
  SGDOptions options_;
};

}  // namespace duet::optim
