#include "duet/optim/sgd.h"

#include "duet/autograd/grad_mode.h"
#include "duet/kernels/optim_kernels.h"

namespace duet::optim {

SGD::SGD(std::vector<Tensor> params, SGDOptions options) : Optimizer(std::move(params), options.lr), options_(options) {
  DUET_CHECK(options.momentum >= 0 && options.weight_decay >= 0, "SGD: momentum and weight_decay must be >= 0");
  DUET_CHECK(!options.nesterov || (options.momentum > 0 && options.dampening == 0),
             "SGD: nesterov needs momentum > 0 and dampening 0");
}

// One fused kernel per parameter (kernels/optim_kernels.h), with PyTorch's semantics: the
// momentum buffer starts as the first step's gradient, undamped.
void SGD::step() {
  NoGradGuard no_grad;
  for (size_t i = 0; i < params().size(); ++i) {
    const Tensor& p = params()[i];
    Tensor g = p.grad();
    if (!g.defined()) continue;
    count_update(i);
    kernels::SgdUpdateArgs args{.lr = lr(),
                                .momentum = options_.momentum,
                                .dampening = options_.dampening,
                                .weight_decay = options_.weight_decay,
                                .nesterov = options_.nesterov,
                                .first_step = false,
                                .maximize = options_.maximize};
    Tensor velocity;
    if (options_.momentum != 0) {
      args.first_step = !has_buffer(i, "momentum_buffer");
      velocity = buffer(i, "momentum_buffer");
    }
    kernels::sgd_update(p, g.contiguous(), velocity, args);
    p.bump_version();
    if (velocity.defined()) velocity.bump_version();
  }
  ++step_count_;
}

std::vector<std::string> SGD::buffer_names() const {
  if (options_.momentum == 0) return {};
  return {"momentum_buffer"};
}

std::unique_ptr<Optimizer> SGD::make_like(std::vector<Tensor> params) const {
  SGDOptions options = options_;
  options.lr = lr();
  return std::make_unique<SGD>(std::move(params), options);
}

}  // namespace duet::optim
