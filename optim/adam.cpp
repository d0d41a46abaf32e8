#include "duet/optim/adam.h"

#include <algorithm>
#include <cmath>

#include "duet/autograd/grad_mode.h"
#include "duet/kernels/optim_kernels.h"

namespace duet::optim {

Adam::Adam(std::vector<Tensor> params, AdamOptions options)
    : Optimizer(std::move(params), options.lr), options_(options) {
  DUET_CHECK(options.beta1 >= 0 && options.beta1 < 1 && options.beta2 >= 0 && options.beta2 < 1,
             "Adam: betas must be in [0, 1), got ", options.beta1, " and ", options.beta2);
  DUET_CHECK(options.eps > 0 && options.weight_decay >= 0, "Adam: eps must be > 0 and weight_decay >= 0");
}

// One fused kernel per parameter (kernels/optim_kernels.h). The bias corrections use the
// parameter's own count of updates, as PyTorch's state['step']: a parameter whose first
// gradient arrives at the sixth step is corrected with t = 1, not 6.
void Adam::step() {
  NoGradGuard no_grad;
  ++step_count_;
  kernels::AdamUpdateArgs args{.lr = lr(),
                               .beta1 = options_.beta1,
                               .beta2 = options_.beta2,
                               .eps = options_.eps,
                               .weight_decay = options_.weight_decay,
                               .decoupled_weight_decay = options_.decoupled_weight_decay,
                               .amsgrad = options_.amsgrad,
                               .maximize = options_.maximize};
  for (size_t i = 0; i < params().size(); ++i) {
    const Tensor& p = params()[i];
    Tensor g = p.grad();
    if (!g.defined()) continue;
    const auto t = static_cast<double>(count_update(i));
    args.bias_correction1 = 1 - std::pow(options_.beta1, t);
    args.bias_correction2 = 1 - std::pow(options_.beta2, t);
    const Tensor& m = buffer(i, "exp_avg");
    const Tensor& v = buffer(i, "exp_avg_sq");
    const Tensor max_v = options_.amsgrad ? buffer(i, "max_exp_avg_sq") : Tensor();
    kernels::adam_update(p, g.contiguous(), m, v, max_v, args);
    for (const Tensor* t : {&p, &m, &v, &max_v}) {
      if (t->defined()) t->bump_version();
    }
  }
}

std::vector<std::string> Adam::buffer_names() const {
  std::vector<std::string> names = {"exp_avg", "exp_avg_sq"};
  if (options_.amsgrad) names.push_back("max_exp_avg_sq");
  std::sort(names.begin(), names.end());
  return names;
}

std::unique_ptr<Optimizer> Adam::make_like(std::vector<Tensor> params) const {
  AdamOptions options = options_;
  options.lr = lr();
  return std::make_unique<Adam>(std::move(params), options);
}

AdamW::AdamW(std::vector<Tensor> params, AdamOptions options)
    : Adam(std::move(params), [&] {
        options.decoupled_weight_decay = true;
        return options;
      }()) {}

}  // namespace duet::optim
