#include "duet/optim/sgd.h"

#include "duet/autograd/grad_mode.h"
#include "duet/autograd/ops.h"

namespace duet::optim {

SGD::SGD(std::vector<Tensor> params, SGDOptions options) : Optimizer(std::move(params), options.lr), options_(options) {
  DUET_CHECK(options.momentum >= 0 && options.weight_decay >= 0, "SGD: momentum and weight_decay must be >= 0");
  DUET_CHECK(!options.nesterov || (options.momentum > 0 && options.dampening == 0),
             "SGD: nesterov needs momentum > 0 and dampening 0");
}

void SGD::step() {
  NoGradGuard no_grad;
  for (size_t i = 0; i < params().size(); ++i) {
    const Tensor& p = params()[i];
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (options_.weight_decay != 0) g = g + p * options_.weight_decay;
    if (options_.momentum != 0) {
      bool first = !has_buffer(i, "momentum_buffer");
      Tensor& velocity = buffer(i, "momentum_buffer");
      if (first) {
        velocity.copy_(g);
      } else {
        velocity.mul_(options_.momentum);
        velocity.add_(g, 1 - options_.dampening);
      }
      g = options_.nesterov ? g + velocity * options_.momentum : velocity;
    }
    p.add_(g, -lr());
  }
  ++step_count_;
}

}  // namespace duet::optim
