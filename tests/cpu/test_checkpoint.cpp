// Checkpoints: malformed metadata is refused, and a file read with read_checkpoint restores
// its parts one by one.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>

#include "duet/duet.h"
#include "duet/nn/models/models.h"
#include "duet/nn/safetensors.h"
#include "duet/optim/checkpoint.h"
#include "duet/optim/sgd.h"

using namespace duet;
using Catch::Matchers::Contains;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("duet-test-checkpoint-" + name)).string();
}

// A real checkpoint of mlp after one SGD step with momentum, so the optimizer has state.
void write_checkpoint(const std::string& path, int64_t epochs_done = 1) {
  manual_seed(1);
  std::shared_ptr<nn::Module> model = nn::models::mlp();
  optim::SGD sgd(model->parameters(), {.lr = 0.1, .momentum = 0.9});
  sum(model->forward(rand({2, 1, 28, 28}))).backward();
  sgd.step();
  optim::save_checkpoint(path, *model, sgd, default_generator(), {.epochs_done = epochs_done, .extra = {{"model", "mlp"}}});
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
