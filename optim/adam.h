// Adam (Kingma & Ba, 2015) and AdamW (Loshchilov & Hutter, 2019): the same update, with the
// weight decay added to the gradient (Adam) or applied to the weights directly (AdamW), either with
// AMSGrad. The state per parameter, saved in checkpoints (Optimizer::state): exp_avg, exp_avg_sq,
// max_exp_avg_sq with amsgrad, and the parameter's own step count.
#pragma once

#include "duet/optim/optimizer.h"

namespace duet::optim {

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool decoupled_weight_decay = false;  // true: AdamW
  // AMSGrad (Reddi et al., 2018), as torch.optim's amsgrad=True in 1.13: keeps max_exp_avg_sq, the
  // running maximum of exp_avg_sq, and divides by its bias-corrected square root instead.
  bool amsgrad = false;
  bool maximize = false;  // ascend the objective, as torch.optim's maximize=True
};

class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, AdamOptions options);
  void step() override;
  const AdamOptions& options() const { return options_; }
  std::vector<std::string> buffer_names() const override;
  // An Adam with these options (AdamW's included: its options say decoupled_weight_decay).
  std::unique_ptr<Optimizer> make_like(std::vector<Tensor> params) const override;

 private:
  AdamOptions options_;
};

// Adam with decoupled weight decay, defaulting to PyTorch's weight_decay of 0.01.
class AdamW final : public Adam {
 public:
  AdamW(std::vector<Tensor> params, AdamOptions options = {.weight_decay = 1e-2});
};

}  // namespace duet::optim
