#include "optim_configs.h"

#include <cmath>
#include <utility>

namespace duet::test {

std::vector<kernels::SgdUpdateArgs> sgd_configs() {
  std::vector<kernels::SgdUpdateArgs> configs;
  for (double momentum : {0.0, 0.9})
    for (double dampening : {0.0, 0.1})
      for (double weight_decay : {0.0, 0.01})
        for (bool nesterov : {false, true})
          for (bool maximize : {false, true}) {
            if (momentum == 0 && (dampening != 0 || nesterov)) continue;
            if (nesterov && dampening != 0) continue;
            if (maximize && weight_decay == 0) continue;  // with decay, where the sign's order matters
            configs.push_back({.lr = 0.05,
                               .momentum = momentum,
                               .dampening = dampening,
                               .weight_decay = weight_decay,
                               .nesterov = nesterov,
                               .first_step = false,
                               .maximize = maximize});
          }
  return configs;
}

std::vector<kernels::AdamUpdateArgs> adam_configs() {
  std::vector<kernels::AdamUpdateArgs> configs;
  for (double weight_decay : {0.0, 0.05})
    for (bool decoupled : {false, true})
      for (auto [beta1, beta2] : {std::pair{0.9, 0.999}, std::pair{0.0, 0.5}})
        for (bool amsgrad : {false, true})
          for (bool maximize : {false, true}) {
            if (weight_decay == 0 && decoupled) continue;
            if (maximize && weight_decay == 0) continue;  // with decay, where the sign's order matters
            configs.push_back({.lr = 0.01,
                               .beta1 = beta1,
                               .beta2 = beta2,
                               .eps = 1e-8,
                               .weight_decay = weight_decay,
                               .decoupled_weight_decay = decoupled,
                               .amsgrad = amsgrad,
                               .bias_correction1 = 1,
                               .bias_correction2 = 1,
                               .maximize = maximize});
          }
  return configs;
}

kernels::AdamUpdateArgs bias_corrected(kernels::AdamUpdateArgs config, int t) {
  config.bias_correction1 = 1 - std::pow(config.beta1, t);
  config.bias_correction2 = 1 - std::pow(config.beta2, t);
  return config;
}

std::string describe(const kernels::SgdUpdateArgs& args) {
  return "momentum " + std::to_string(args.momentum) + " dampening " + std::to_string(args.dampening) +
         " weight_decay " + std::to_string(args.weight_decay) + (args.nesterov ? " nesterov" : "") +
         (args.maximize ? " maximize" : "");
}

std::string describe(const kernels::AdamUpdateArgs& args) {
  return "betas " + std::to_string(args.beta1) + "/" + std::to_string(args.beta2) + " weight_decay " +
         std::to_string(args.weight_decay) + (args.decoupled_weight_decay ? " (AdamW)" : "") +
         (args.amsgrad ? " amsgrad" : "") + (args.maximize ? " maximize" : "");
}

}  // namespace duet::test
