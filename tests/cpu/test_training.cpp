// End to end on the CPU: the loss falls on real data, and a resumed run reproduces an
// uninterrupted one exactly.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>

#include "duet/data/fashion_mnist.h"
#include "duet/duet.h"
#include "duet/nn/models/models.h"
#include "duet/optim/checkpoint.h"
#include "duet/optim/sgd.h"
#include "duet/parallel/trainer.h"

using namespace duet;

namespace {

// The first n test images: small enough for a unit test, real enough to learn from.
data::TensorDataset first(const data::TensorDataset& full, int64_t n) {
  return {full.images.narrow(0, 0, n).contiguous(), full.labels.narrow(0, 0, n).contiguous()};
}

std::unique_ptr<parallel::SingleDevice> make_strategy(uint64_t seed) {
  manual_seed(seed);
  std::shared_ptr<nn::Module> model = nn::models::lenet_relu();
  return std::make_unique<parallel::SingleDevice>(
      model, std::make_unique<optim::SGD>(model->parameters(), optim::SGDOptions{.lr = 0.1, .momentum = 0.9}), cpu());
}

}  // namespace

TEST_CASE("lenet learns: the loss falls over 50 steps on Fashion-MNIST", "[training][dataset]") {
  manual_seed(0);
  data::DataLoader loader(first(data::FashionMNIST::test(), 50 * 64), {.batch_size = 64, .shuffle = true});
  std::shared_ptr<nn::Module> model = nn::models::lenet();
  parallel::SingleDevice strategy(
      model, std::make_unique<optim::SGD>(model->parameters(), optim::SGDOptions{.lr = 0.9}), cpu());
  std::vector<double> losses;
  for (auto& batch : loader) losses.push_back(strategy.train_step(batch).loss);
  REQUIRE(losses.size() == 50);
  double head = (losses[0] + losses[1] + losses[2] + losses[3] + losses[4]) / 5;
  double tail = (losses[45] + losses[46] + losses[47] + losses[48] + losses[49]) / 5;
  INFO("mean loss of the first 5 steps " << head << ", of the last 5 " << tail);
  CHECK(tail < head - 0.3);
}

TEST_CASE("resuming from a checkpoint reproduces the uninterrupted run exactly", "[training][checkpoint][dataset]") {
  data::TensorDataset train_set = first(data::FashionMNIST::test(), 512), test_set = first(train_set, 64);
  std::string path = (std::filesystem::temp_directory_path() / "duet-test-resume.safetensors").string();

  auto straight = make_strategy(3);
  {
    data::DataLoader train(train_set, {.batch_size = 64, .shuffle = true, .seed = 5});
    data::DataLoader test(test_set, {.batch_size = 64});
    parallel::Trainer(*straight, train, test).fit(0, 2);
  }

  auto first_half = make_strategy(3);
  {
    data::DataLoader train(train_set, {.batch_size = 64, .shuffle = true, .seed = 5});
    data::DataLoader test(test_set, {.batch_size = 64});
    parallel::Trainer(*first_half, train, test).fit(0, 1);
    optim::save_checkpoint(path, first_half->model(), first_half->optimizer(), default_generator(), {.epochs_done = 1});
  }

  auto resumed = make_strategy(99);  // a different init, overwritten by the checkpoint
  optim::CheckpointInfo info =
      optim::load_checkpoint(path, resumed->model(), resumed->optimizer(), default_generator());
  CHECK(info.epochs_done == 1);
  {
    data::DataLoader train(train_set, {.batch_size = 64, .shuffle = true, .seed = 5});
    data::DataLoader test(test_set, {.batch_size = 64});
    parallel::Trainer(*resumed, train, test).fit(info.epochs_done, 2);
  }
  auto want = straight->model().named_parameters(), got = resumed->model().named_parameters();
  for (size_t i = 0; i < want.size(); ++i) {
    INFO(want[i].first);
    CHECK(got[i].second.to_vector<float>() == want[i].second.to_vector<float>());
  }
  std::remove(path.c_str());
}

TEST_CASE("loading a checkpoint into the wrong model names the tensor and both shapes",
          "[training][checkpoint][errors]") {
  std::string path = (std::filesystem::temp_directory_path() / "duet-test-wrong.safetensors").string();
  auto lenet_relu = make_strategy(1);
  optim::save_checkpoint(path, lenet_relu->model(), lenet_relu->optimizer(), default_generator(), {.epochs_done = 1});
  std::shared_ptr<nn::Module> lenet = nn::models::lenet();
  optim::SGD opt(lenet->parameters(), {.lr = 0.1, .momentum = 0.9});
  CHECK_THROWS_WITH(optim::load_checkpoint(path, *lenet, opt, default_generator()),
                    Catch::Matchers::Contains(path) && Catch::Matchers::Contains("'0.weight'") &&
                        Catch::Matchers::Contains("[20, 1, 3, 3]") && Catch::Matchers::Contains("[6, 1, 5, 5]"));
  std::remove(path.c_str());
}
