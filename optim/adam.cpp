#include "duet/optim/adam.h"

#include <cmath>

#include "duet/autograd/grad_mode.h"
#include "duet/autograd/ops.h"

namespace duet::optim {

Adam::Adam(std::vector<Tensor> params, AdamOptions options) : Optimizer(std::move(params), options.lr), options_(options) {
  DUET_CHECK(options.beta1 >= 0 && options.beta1 < 1 && options.beta2 >= 0 && options.beta2 < 1,
             "Adam: betas must be in [0, 1), got ", options.beta1, " and ", options.beta2);
  DUET_CHECK(options.eps > 0 && options.weight_decay >= 0, "Adam: eps must be > 0 and weight_decay >= 0");
}

void Adam::step() {
  NoGradGuard no_grad;
  ++step_count_;
  double t = static_cast<double>(step_count_);
  double bias1 = 1 - std::pow(options_.beta1, t), bias2 = 1 - std::pow(options_.beta2, t);
  for (size_t i = 0; i < params().size(); ++i) {
    const Tensor& p = params()[i];
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (options_.weight_decay != 0) {
      if (options_.decoupled_weight_decay) p.mul_(1 - lr() * options_.weight_decay);
      else g = g + p * options_.weight_decay;
    }
    Tensor& m = buffer(i, "exp_avg");
    Tensor& v = buffer(i, "exp_avg_sq");
    m.mul_(options_.beta1);
    m.add_(g, 1 - options_.beta1);
    v.mul_(options_.beta2);
    v.add_(g * g, 1 - options_.beta2);
    Tensor denom = sqrt(v) / std::sqrt(bias2) + options_.eps;
    p.add_(m / denom, -lr() / bias1);
  }
}

AdamW::AdamW(std::vector<Tensor> params, AdamOptions options)
    : Adam(std::move(params), [&] {
        options.decoupled_weight_decay = true;
        return options;
      }()) {}

}  // namespace duet::optim
