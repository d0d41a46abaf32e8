// duet against PyTorch: tests/golden/lenet.safetensors was written by tools/make_golden.py
// (Debian's python3-torch) and holds a LeNet's weights, an input batch, the logits, the loss,
// every gradient and the losses of 5 SGD steps. duet must agree within 1e-5 relative.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "duet/duet.h"
#include "duet/nn/functional.h"
#include "duet/nn/models/models.h"
#include "duet/nn/safetensors.h"
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

}  // namespace

TEST_CASE("LeNet matches PyTorch: logits, loss, gradients and 5 SGD steps", "[golden]") {
  nn::SafeTensors golden = nn::load_safetensors(DUET_SOURCE_DIR "/tests/golden/lenet.safetensors");
  REQUIRE(golden.metadata.at("format") == "duet-golden");
  REQUIRE(golden.metadata.at("version") == "1");
  auto model = nn::models::lenet();
  model->load_state_dict(with_prefix(golden, "param."));
  const Tensor& x = golden.tensors.at("input");
  const Tensor& y = golden.tensors.at("target");

  Tensor logits = model->forward(x);
  CHECK(relative_error(logits, golden.tensors.at("logits")) < 1e-5);
  Tensor loss = nn::functional::cross_entropy(logits, y);
  CHECK(relative_error(loss, golden.tensors.at("loss")) < 1e-5);
  loss.backward();
  for (const auto& [name, p] : model->named_parameters()) {
    INFO("gradient of " << name);
    CHECK(relative_error(p.grad(), golden.tensors.at("grad." + name)) < 1e-5);
  }

  double lr = std::stod(golden.metadata.at("lr"));
  optim::SGD opt(model->parameters(), {.lr = lr});
  std::vector<float> want = golden.tensors.at("step_losses").to_vector<float>();
  for (size_t step = 0; step < want.size(); ++step) {
    opt.zero_grad();
    Tensor step_loss = nn::functional::cross_entropy(model->forward(x), y);
    step_loss.backward();
    opt.step();
    INFO("step " << step);
    CHECK(step_loss.item<float>() == Approx(want[step]).epsilon(1e-5));
  }
  for (const auto& [name, p] : model->named_parameters()) {
    INFO("parameter after the steps: " << name);
    CHECK(relative_error(p, golden.tensors.at("final." + name)) < 1e-5);
  }
}
