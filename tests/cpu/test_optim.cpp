// Optimizers against PyTorch 1.13: three steps on loss = sum(c * p^2), c = [1, 2, 0.5],
// from p = [1, -2, 3]. The expected values were printed by torch.optim with the same settings.
#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>

#include "duet/duet.h"
#include "duet/optim/adam.h"
#include "duet/optim/checkpoint.h"
#include "duet/optim/schedule.h"
#include "duet/optim/sgd.h"

using namespace duet;
using Catch::Matchers::Contains;

namespace {

std::vector<float> run(const std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>& make) {
  Tensor p = from_vector<float>({1, -2, 3});
  p.requires_grad_();
  Tensor c = from_vector<float>({1, 2, 0.5f});
  auto opt = make({p});
  for (int step = 0; step < 3; ++step) {
    opt->zero_grad();
    sum(p * p * c).backward();
    opt->step();
  }
  return p.to_vector<float>();
}

void check_close(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).epsilon(1e-5).margin(1e-6));
}

}  // namespace

TEST_CASE("SGD matches torch.optim.SGD", "[optim]") {
  check_close(run([](auto ps) { return std::make_unique<optim::SGD>(ps, optim::SGDOptions{.lr = 0.1}); }),
              {0.5119999647f, -0.4320000112f, 2.1870000362f});
  check_close(run([](auto ps) {
                return std::make_unique<optim::SGD>(
                    ps, optim::SGDOptions{.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .weight_decay = 0.01});
              }),
              {0.0949985906f, 1.0107231140f, 1.5149871111f});
  check_close(run([](auto ps) {
                return std::make_unique<optim::SGD>(ps,
                                                    optim::SGDOptions{.lr = 0.1, .momentum = 0.9, .nesterov = true});
              }),
              {-0.1083519831f, 0.8665919304f, 0.9819630384f});
}

TEST_CASE("Adam and AdamW match torch.optim", "[optim]") {
  check_close(run([](auto ps) {
                return std::make_unique<optim::Adam>(ps, optim::AdamOptions{.lr = 0.1, .weight_decay = 0.01});
              }),
              {0.7015862465f, -1.7006233931f, 2.7003815174f});
  check_close(run([](auto ps) {
                return std::make_unique<optim::AdamW>(ps, optim::AdamOptions{.lr = 0.1, .weight_decay = 0.01});
              }),
              {0.6989112496f, -1.6949446201f, 2.6917035580f});
}

TEST_CASE("optimizer state round-trips and is checked on load", "[optim]") {
  Tensor p = from_vector<float>({1, 2});
  p.requires_grad_();
  optim::SGD opt({p}, {.lr = 0.1, .momentum = 0.9});
  sum(p * p).backward();
  opt.step();
  nn::NamedTensors state = opt.state();
  std::map<std::string, Tensor> saved(state.begin(), state.end());
  REQUIRE(saved.count("0.momentum_buffer"));
  CHECK(saved.at("step").item<int64_t>() == 1);

  Tensor q = from_vector<float>({1, 2});
  q.requires_grad_();
  optim::SGD restored({q}, {.lr = 0.1, .momentum = 0.9});
  restored.load_state(saved);
  CHECK(restored.state()[1].second.to_vector<float>() == saved.at("0.momentum_buffer").to_vector<float>());

  saved["0.momentum_buffer"] = zeros({3});
  CHECK_THROWS_WITH(restored.load_state(saved), Contains("shape [3]") && Contains("[2]"));
  CHECK_THROWS_WITH(restored.load_state({{"7.momentum_buffer", zeros({2})}}),
                    Contains("unexpected entry '7.momentum_buffer'"));
}

TEST_CASE("Adam with amsgrad keeps max_exp_avg_sq in its state and resumes from a checkpoint exactly",
          "[optim][checkpoint]") {
  const std::string path = (std::filesystem::temp_directory_path() / "duet-test-amsgrad-ckpt.safetensors").string();
  const Tensor x = from_vector<float>({1, -2, 0.5f, 3, 1, -1}, {2, 3});
  auto train = [&](nn::Linear& model, optim::Optimizer& opt, int steps) {
    for (int step = 0; step < steps; ++step) {
      opt.zero_grad();
      // Gradients that shrink: the running maximum of v then matters.
      sum(model->forward(x) * model->forward(x)).backward();
      opt.step();
    }
  };
  const optim::AdamOptions options{.lr = 0.05, .weight_decay = 0.01, .amsgrad = true};
  Generator generator(3);
  nn::Linear straight(3, 2), first(3, 2), resumed(3, 2);
  first->load_state_dict([&] {
    auto sd = straight->state_dict();
    return std::map<std::string, Tensor>(sd.begin(), sd.end());
  }());
  optim::AdamW straight_opt(straight->parameters(), options), first_opt(first->parameters(), options);
  train(straight, straight_opt, 6);
  train(first, first_opt, 3);
  std::map<std::string, Tensor> state;
  for (auto& [name, t] : first_opt.state()) state[name] = t;
  REQUIRE(state.count("0.max_exp_avg_sq"));
  REQUIRE(state.count("1.max_exp_avg_sq"));
  save_checkpoint(path, *first, first_opt, generator, {.epochs_done = 1});

  optim::AdamW resumed_opt(resumed->parameters(), options);
  load_checkpoint(path, *resumed, resumed_opt, generator);
  train(resumed, resumed_opt, 3);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(resumed->parameters()[i].to_vector<float>() == straight->parameters()[i].to_vector<float>());
  }
  std::filesystem::remove(path);
}

TEST_CASE("bad optimizer settings are refused", "[optim][errors]") {
  Tensor p = ones({2});
  p.requires_grad_();
  CHECK_THROWS_WITH(optim::SGD({p}, {.lr = -1}), Contains("learning rate"));
  CHECK_THROWS_WITH(optim::SGD({p}, {.lr = 0.1, .nesterov = true}), Contains("nesterov"));
  CHECK_THROWS_WITH(optim::Adam({p}, {.beta1 = 1.0}), Contains("betas"));
  CHECK_THROWS_WITH(optim::SGD({ones({2})}, {.lr = 0.1}), Contains("requires grad"));
}

TEST_CASE("learning-rate schedules", "[optim]") {
  optim::StepLR step(2, 0.5);
  CHECK(step.lr_at(1.0, 0) == 1.0);
  CHECK(step.lr_at(1.0, 3) == 0.5);
  CHECK(step.lr_at(1.0, 4) == 0.25);
  optim::CosineLR cosine(10, 0.1);
  CHECK(cosine.lr_at(1.0, 0) == Approx(1.0));
  CHECK(cosine.lr_at(1.0, 5) == Approx(0.55));
  CHECK(cosine.lr_at(1.0, 10) == Approx(0.1));
}
