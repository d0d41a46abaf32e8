// duet against PyTorch: tools/make_golden.py (Debian's python3-torch) wrote each model's weights,
// an input batch, the logits, the loss, every gradient, the losses of 5 training steps and the
// weights after them to tests/golden/NAME.safetensors. duet must agree within 1e-5 relative:
//   lenet        d2l's LeNet, plain cross-entropy, SGD
//   options_cnn  grouped and dilated convolutions, ceil-mode pooling, label-smoothed
//                cross-entropy, Adam
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>

#include "duet/duet.h"
#include "duet/nn/functional.h"
#include "duet/nn/models/models.h"
#include "duet/nn/safetensors.h"
#include "duet/optim/adam.h"
#include "duet/optim/sgd.h"

using namespace duet;

namespace {

// max |a - b| over max |b|: relative to the tensor's scale, so tiny elements don't dominate.
double relative_error(const Tensor& got, const Tensor& want) {
  REQUIRE(got.sizes() == want.sizes());
  std::vector<double> a = got.to_vector<double>(), b = want.to_vector<double>();
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return scale == 0 ? diff : diff / scale;
}

std::map<std::string, Tensor> with_prefix(const nn::SafeTensors& st, const std::string& prefix) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, t] : st.tensors) {
    if (name.rfind(prefix, 0) == 0) out[name.substr(prefix.size())] = t;
  }
  return out;
}

namespace F = nn::functional;
using Loss = std::function<Tensor(const Tensor& logits, const Tensor& target)>;
using MakeOptimizer = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor> params, double lr)>;

nn::SafeTensors load_golden(const std::string& name) {
  nn::SafeTensors golden = nn::load_safetensors(DUET_SOURCE_DIR "/tests/golden/" + name + ".safetensors");
  REQUIRE(golden.metadata.at("format") == "duet-golden");
  REQUIRE(golden.metadata.at("version") == "1");
  REQUIRE(golden.metadata.at("model") == name);
  return golden;
}

// Loads the file's weights into `model`, then checks the logits, the loss, every gradient, each
// training step's loss and the weights after the steps against PyTorch's.
void check_against_golden(const nn::SafeTensors& golden, nn::Module& model, const Loss& loss_fn,
                          const MakeOptimizer& make_optimizer) {
  model.load_state_dict(with_prefix(golden, "param."));
  const Tensor& x = golden.tensors.at("input");
  const Tensor& y = golden.tensors.at("target");

  Tensor logits = model.forward(x);
  CHECK(relative_error(logits, golden.tensors.at("logits")) < 1e-5);
  Tensor loss = loss_fn(logits, y);
  CHECK(relative_error(loss, golden.tensors.at("loss")) < 1e-5);
  loss.backward();
  for (const auto& [param, p] : model.named_parameters()) {
    INFO("gradient of " << param);
    CHECK(relative_error(p.grad(), golden.tensors.at("grad." + param)) < 1e-5);
  }

  std::unique_ptr<optim::Optimizer> opt = make_optimizer(model.parameters(), std::stod(golden.metadata.at("lr")));
  std::vector<float> want = golden.tensors.at("step_losses").to_vector<float>();
  REQUIRE(static_cast<int64_t>(want.size()) == std::stoll(golden.metadata.at("steps")));
  for (size_t step = 0; step < want.size(); ++step) {
    opt->zero_grad();
    Tensor step_loss = loss_fn(model.forward(x), y);
    step_loss.backward();
    opt->step();
    INFO("step " << step);
    CHECK(step_loss.item<float>() == Approx(want[step]).epsilon(1e-5));
  }
  for (const auto& [param, p] : model.named_parameters()) {
    INFO("parameter after the steps: " << param);
    CHECK(relative_error(p, golden.tensors.at("final." + param)) < 1e-5);
  }
}

}  // namespace

TEST_CASE("LeNet matches PyTorch: logits, loss, gradients and 5 SGD steps", "[golden]") {
  auto model = nn::models::lenet();
  check_against_golden(
      load_golden("lenet"), *model, [](const Tensor& logits, const Tensor& y) { return F::cross_entropy(logits, y); },
      [](std::vector<Tensor> params, double lr) {
        return std::make_unique<optim::SGD>(std::move(params), optim::SGDOptions{.lr = lr});
      });
}

TEST_CASE(
    "A CNN with grouped and dilated convolutions, ceil-mode pooling and label smoothing matches PyTorch: "
    "logits, loss, gradients and 5 Adam steps",
    "[golden]") {
  // tools/make_golden.py's options_cnn, layer for layer (the state dicts' names are the indices).
  nn::Sequential model(nn::Conv2d(nn::Conv2dOptions(1, 4, 3).padding(1)), nn::ReLU(),
                       nn::Conv2d(nn::Conv2dOptions(4, 8, 3).padding(1).groups(2)), nn::ReLU(),
                       nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2).ceil_mode(true)),
                       nn::Conv2d(nn::Conv2dOptions(8, 8, 3).padding(2).dilation(2)), nn::ReLU(),
                       nn::AvgPool2d(nn::AvgPool2dOptions(3).stride(2).ceil_mode(true)), nn::Flatten(),
                       nn::Linear(72, 10));
  const nn::SafeTensors golden = load_golden("options_cnn");
  F::CrossEntropyOptions label_smoothing;
  label_smoothing.label_smoothing = std::stod(golden.metadata.at("label_smoothing"));
  CHECK(label_smoothing.label_smoothing == 0.1);
  check_against_golden(
      golden, *model,
      [&](const Tensor& logits, const Tensor& y) { return F::cross_entropy(logits, y, label_smoothing); },
      [](std::vector<Tensor> params, double lr) {
        return std::make_unique<optim::Adam>(std::move(params), optim::AdamOptions{.lr = lr});
      });
}
