// Checkpoints: malformed metadata and damaged tensors are refused, a file read with
// read_checkpoint restores its parts one by one, and every strategy resumes bit for bit from
// them, with gradient accumulation and SyncBatchNorm too.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>

#include "duet/duet.h"
#include "duet/nn/models/models.h"
#include "duet/nn/safetensors.h"
#include "duet/optim/checkpoint.h"
#include "duet/optim/sgd.h"
#include "duet/parallel/strategy.h"
#include "duet/parallel/trainer.h"

using namespace duet;
using Catch::Matchers::Contains;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("duet-test-checkpoint-" + name)).string();
}

// n random images and labels, the same for the same seed.
data::TensorDataset random_images(int64_t n, uint64_t seed) {
  manual_seed(seed);
  return {rand({n, 1, 28, 28}), (rand({n}) * 10).to(DType::i64)};
}

// What a run's result depends on besides its strategy: micro-batches per step, and ddp's
// SyncBatchNorm (on a model with BatchNorm, which lenet-relu lacks).
struct RunSetting {
  int64_t accumulate = 1;
  bool sync_bn = false;
};

// A small convolutional net with BatchNorm, whose statistics SyncBatchNorm makes global.
std::shared_ptr<nn::Module> conv_bn_net() {
  using namespace nn;
  return Sequential(Conv2d(Conv2dOptions(1, 4, 3).padding(1)), BatchNorm2d(4), ReLU(), AvgPool2d(4), Flatten(),
                    Linear(196, 10));
}

// lenet-relu (or conv_bn_net with sync_bn) with momentum SGD under `strategy` on cpu:0..1,
// from the initial weights of seed 3.
std::unique_ptr<parallel::Strategy> make(parallel::StrategyKind strategy, const RunSetting& setting = {},
                                         const optim::Checkpoint* checkpoint = nullptr) {
  manual_seed(3);
  std::shared_ptr<nn::Module> model = setting.sync_bn ? conv_bn_net() : nn::models::lenet_relu();
  if (checkpoint) checkpoint->restore_model(*model);  // before the replicas are made
  auto sgd = [checkpoint](std::vector<Tensor> params) {
    auto optimizer = std::make_unique<optim::SGD>(std::move(params), optim::SGDOptions{.lr = 0.05, .momentum = 0.9});
    if (checkpoint) checkpoint->restore_optimizer(*optimizer);  // every replica's
    return optimizer;
  };
  return parallel::make_strategy(strategy, model, sgd, {cpu(0), cpu(1)}, {.ddp = {.sync_batchnorm = setting.sync_bn}});
}

// Made once, before any run: drawing them would move the generator a checkpoint restores.
struct Data {
  data::TensorDataset train = random_images(256, 11), test = random_images(64, 12);
};

void fit(parallel::Strategy& strategy, const Data& data, int64_t first_epoch, int64_t last_epoch,
         int64_t accumulate = 1) {
  data::DataLoader train(data.train, {.batch_size = 64, .shuffle = true, .seed = 5});
  data::DataLoader test(data.test, {.batch_size = 64});
  parallel::Trainer(strategy, train, test, accumulate).fit(first_epoch, last_epoch);
}

// A real checkpoint of mlp after one SGD step with momentum, so the optimizer has state.
void write_checkpoint(const std::string& path, int64_t epochs_done = 1) {
  manual_seed(1);
  std::shared_ptr<nn::Module> model = nn::models::mlp();
  optim::SGD sgd(model->parameters(), {.lr = 0.1, .momentum = 0.9});
  sum(model->forward(rand({2, 1, 28, 28}))).backward();
  sgd.step();
  optim::save_checkpoint(path, *model, sgd, default_generator(),
                         {.epochs_done = epochs_done, .extra = {{"model", "mlp"}}});
}

// The checkpoint at `path` with one metadata entry replaced.
void rewrite_metadata(const std::string& path, const std::string& key, const std::string& value) {
  nn::SafeTensors file = nn::load_safetensors(path);
  file.metadata[key] = value;
  nn::save_safetensors(path, {file.tensors.begin(), file.tensors.end()}, file.metadata);
}

}  // namespace

TEST_CASE("checkpoint: an epochs_done that is negative or not a whole number is refused", "[checkpoint][errors]") {
  const std::string path = temp_path("epochs.safetensors");
  write_checkpoint(path);
  for (const std::string bad : {"-2", "two", "", "1.5", " 3", "3 ", "+3", "99999999999999999999"}) {
    INFO("epochs_done '" << bad << "'");
    rewrite_metadata(path, "epochs_done", bad);
    CHECK_THROWS_WITH(optim::read_checkpoint(path),
                      Contains(path) && Contains("'epochs_done' is '" + bad + "', expected a whole number from 0"));
  }
  rewrite_metadata(path, "epochs_done", "7");
  CHECK(optim::read_checkpoint(path).info.epochs_done == 7);

  std::shared_ptr<nn::Module> model = nn::models::mlp();
  optim::SGD sgd(model->parameters(), {.lr = 0.1});
  CHECK_THROWS_WITH(optim::save_checkpoint(path, *model, sgd, default_generator(), {.epochs_done = -2}),
                    Contains("epochs_done must be >= 0, got -2"));
  std::remove(path.c_str());
}

TEST_CASE("checkpoint: read_checkpoint restores model, optimizer and generator separately", "[checkpoint]") {
  const std::string path = temp_path("parts.safetensors");
  write_checkpoint(path, 3);
  optim::Checkpoint checkpoint = optim::read_checkpoint(path);
  CHECK(checkpoint.info.epochs_done == 3);
  CHECK(checkpoint.info.extra.at("model") == "mlp");

  manual_seed(2);  // other weights, overwritten below
  std::shared_ptr<nn::Module> model = nn::models::mlp();
  checkpoint.restore_model(*model);
  optim::SGD sgd(model->parameters(), {.lr = 0.1, .momentum = 0.9});
  checkpoint.restore_optimizer(sgd);
  CHECK(sgd.state().size() == checkpoint.optimizer_state.size());
  Generator generator;
  checkpoint.restore_generator(generator);
  CHECK(generator.seed() == checkpoint.rng_seed);
  CHECK(generator.offset() == checkpoint.rng_offset);
  for (const auto& [name, t] : model->state_dict()) {
    INFO(name);
    CHECK(t.to_vector<float>() == checkpoint.model_state.at(name).to_vector<float>());
  }

  std::shared_ptr<nn::Module> other = nn::models::lenet();
  CHECK_THROWS_WITH(checkpoint.restore_model(*other), Contains(path));
  std::remove(path.c_str());
}

TEST_CASE(
    "checkpoint: every strategy resumed after epoch 1 ends bit for bit where the run that did not stop ends, "
    "with each setting that changes the result",
    "[checkpoint][strategies]") {
  const Data data;
  struct Case {
    parallel::StrategyKind strategy;
    RunSetting setting;
  };
  const std::vector<Case> cases = {{parallel::StrategyKind::single, {}},
                                   {parallel::StrategyKind::dp, {}},
                                   {parallel::StrategyKind::ddp, {}},
                                   {parallel::StrategyKind::single, {.accumulate = 2}},
                                   {parallel::StrategyKind::dp, {.accumulate = 2}},
                                   {parallel::StrategyKind::ddp, {.accumulate = 2}},
                                   {parallel::StrategyKind::ddp, {.sync_bn = true}},
                                   {parallel::StrategyKind::ddp, {.accumulate = 2, .sync_bn = true}},
                                   {parallel::StrategyKind::zero1, {.accumulate = 2}}};
  for (const Case& c : cases) {
    INFO(c.strategy << ", accumulate " << c.setting.accumulate << ", sync_bn " << c.setting.sync_bn);
    const std::string path = temp_path(parallel::to_string(c.strategy) + ".safetensors");
    auto straight = make(c.strategy, c.setting);
    fit(*straight, data, 0, 2, c.setting.accumulate);

    auto first_half = make(c.strategy, c.setting);
    fit(*first_half, data, 0, 1, c.setting.accumulate);
    optim::save_checkpoint(path, first_half->model(), first_half->optimizer(), default_generator(), {.epochs_done = 1});
    manual_seed(99);  // the generator too must come from the checkpoint

    optim::Checkpoint checkpoint = optim::read_checkpoint(path);
    auto resumed = make(c.strategy, c.setting, &checkpoint);
    checkpoint.restore_generator(default_generator());
    fit(*resumed, data, checkpoint.info.epochs_done, 2, c.setting.accumulate);
    auto want = straight->model().state_dict(), got = resumed->model().state_dict();
    REQUIRE(want.size() == got.size());
    for (size_t i = 0; i < want.size(); ++i) {
      INFO(want[i].first);
      CHECK(got[i].second.to_vector<float>() == want[i].second.to_vector<float>());
    }
    std::remove(path.c_str());
  }
}

TEST_CASE("checkpoint: a flipped bit in a tensor is reported on load, not trained on", "[checkpoint][errors]") {
  const std::string path = temp_path("flipped.safetensors");
  write_checkpoint(path);
  CHECK(optim::read_checkpoint(path).notes.empty());  // a checksum is recorded, and it matches
  const auto size = std::filesystem::file_size(path);
  for (const auto offset : {size - 1, size / 2}) {  // the last tensor's last byte, one in the middle
    INFO("byte " << offset);
    write_checkpoint(path);
    std::FILE* file = std::fopen(path.c_str(), "r+b");
    REQUIRE(file != nullptr);
    std::fseek(file, static_cast<long>(offset), SEEK_SET);
    const int byte = std::fgetc(file);
    std::fseek(file, static_cast<long>(offset), SEEK_SET);
    std::fputc(byte ^ 0x10, file);
    std::fclose(file);
    CHECK_THROWS_WITH(optim::read_checkpoint(path),
                      Contains(path) && Contains("the tensors do not match the checkpoint's tensor_checksum") &&
                          Contains("the file is damaged"));
  }
  std::remove(path.c_str());
}

TEST_CASE("checkpoint: a file written before duet recorded a checksum loads, with a note", "[checkpoint]") {
  const std::string path = temp_path("unchecked.safetensors");
  write_checkpoint(path, 2);
  nn::SafeTensors file = nn::load_safetensors(path);
  REQUIRE(file.metadata.erase("tensor_checksum") == 1);
  nn::save_safetensors(path, {file.tensors.begin(), file.tensors.end()}, file.metadata);
  optim::Checkpoint checkpoint = optim::read_checkpoint(path);
  CHECK(checkpoint.info.epochs_done == 2);
  REQUIRE(checkpoint.notes.size() == 1);
  CHECK_THAT(checkpoint.notes[0],
             Contains(path) && Contains("has no checksum of its tensors") && Contains("loaded unverified"));
  std::remove(path.c_str());
}
