// The bundled models, for 1x28x28 inputs (Fashion-MNIST) and 10 classes, initialised as d2l
// does (Xavier-uniform weights for mlp, lenet and lenet-relu; PyTorch's defaults for resnet18),
// from the default generator: call duet::manual_seed() first for a reproducible init.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "duet/nn/module.h"

namespace duet::nn::models {

// 784-256-10 with ReLU.
std::shared_ptr<Module> mlp();
// d2l's LeNet-5: conv5x5 1->6 pad 2, sigmoid, avgpool 2; conv5x5 6->16, sigmoid, avgpool 2;
// linear 400->120->84->10 with sigmoid.
std::shared_ptr<Module> lenet();
// d2l's multi-GPU from-scratch LeNet: conv3x3 1->20, relu, avgpool 2; conv5x5 20->50, relu,
// avgpool 2; linear 800->128, relu, 128->10.
std::shared_ptr<Module> lenet_relu();
// d2l's ResNet-18 for 28x28: 3x3 stem with 64 channels and BN, no max-pool, four stages of two
// residual blocks (64/128/256/512), global average pool, linear 512->10.
std::shared_ptr<Module> resnet18();

// "mlp", "lenet", "lenet-relu" or "resnet18"; throws listing the names otherwise.
std::shared_ptr<Module> make(const std::string& name);
const std::vector<std::string>& names();

}  // namespace duet::nn::models
