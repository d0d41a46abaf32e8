#include "duet/nn/models/models.h"

#include "duet/nn/fused_sequential.h"
#include "duet/nn/init.h"
#include "duet/nn/layers.h"

namespace duet::nn::models {
namespace {

// d2l initialises the small models with Xavier-uniform weights (biases keep their default).
std::shared_ptr<Module> xavier(std::shared_ptr<Module> net) {
  for (auto& [name, p] : net->named_parameters()) {
    if (name.size() >= 6 && name.compare(name.size() - 6, 6, "weight") == 0) init::xavier_uniform_(p);
  }
  return net;
}

}  // namespace

std::shared_ptr<Module> mlp() { return xavier(Sequential(Flatten(), Linear(784, 256), ReLU(), Linear(256, 10))); }

// The LeNets pool their activation maps through fused ops (FusedSequential), with the parameter
// names and results of a Sequential.

std::shared_ptr<Module> lenet() {
  return xavier(FusedSequential(Sequential(Conv2d(Conv2dOptions(1, 6, 5).padding(2)), Sigmoid(), AvgPool2d(2),
                                           Conv2d(Conv2dOptions(6, 16, 5)), Sigmoid(), AvgPool2d(2), Flatten(),
                                           Linear(400, 120), Sigmoid(), Linear(120, 84), Sigmoid(), Linear(84, 10))));
}

std::shared_ptr<Module> lenet_relu() {
  return xavier(FusedSequential(Sequential(Conv2d(Conv2dOptions(1, 20, 3)), ReLU(), AvgPool2d(2),
                                           Conv2d(Conv2dOptions(20, 50, 5)), ReLU(), AvgPool2d(2), Flatten(),
                                           Linear(800, 128), ReLU(), Linear(128, 10))));
}

std::shared_ptr<Module> resnet18() {
  auto stage = [](int64_t in, int64_t out, bool first) {
    Sequential blocks;
    blocks->push_back(first ? Residual(in, out) : Residual(in, out, true, 2));
    blocks->push_back(Residual(out, out));
    return blocks;
  };
  return Sequential(Conv2d(Conv2dOptions(1, 64, 3).padding(1)), BatchNorm2d(64), ReLU(), stage(64, 64, true),
                    stage(64, 128, false), stage(128, 256, false), stage(256, 512, false), AdaptiveAvgPool2d(1),
                    Flatten(), Linear(512, 10))
      .ptr();
}

std::shared_ptr<Module> make(const std::string& name) {
  if (name == "mlp") return mlp();
  if (name == "lenet") return lenet();
  if (name == "lenet-relu") return lenet_relu();
  if (name == "resnet18") return resnet18();
  DUET_FAIL("unknown model '", name, "': expected one of mlp, lenet, lenet-relu, resnet18");
}

const std::vector<std::string>& names() {
  static const std::vector<std::string> all = {"mlp", "lenet", "lenet-relu", "resnet18"};
  return all;
}

}  // namespace duet::nn::models
