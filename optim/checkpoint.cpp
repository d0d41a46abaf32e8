#include "duet/optim/checkpoint.h"

#include "duet/nn/safetensors.h"

namespace duet::optim {
namespace {

constexpr const char* kFormat = "duet-checkpoint";
// Version 2 added the optimizer's per-parameter update counts ("optim.<index>.step"). Version 1
// files still load: Optimizer::load_state gives their parameters the global step count.
constexpr const char* kVersion = "2";
constexpr const char* kOldVersion = "1";

uint64_t parse_u64(const std::map<std::string, std::string>& meta, const std::string& key, const std::string& path) {
  auto it = meta.find(key);
  DUET_CHECK(it != meta.end(), path, ": checkpoint metadata lacks '", key, "'");
  try {
    size_t used = 0;
    uint64_t value = std::stoull(it->second, &used);
    DUET_CHECK(used == it->second.size(), "trailing characters");
    return value;
  } catch (const std::exception&) {
    DUET_FAIL(path, ": checkpoint metadata '", key, "' is not a number: '", it->second, "'");
  }
}

}  // namespace

void save_checkpoint(const std::string& path, const nn::Module& model, const Optimizer& optimizer,
                     const Generator& generator, const CheckpointInfo& info) {
  nn::NamedTensors tensors;
  for (auto& [name, t] : model.state_dict()) tensors.emplace_back("model." + name, t);
  for (auto& [name, t] : optimizer.state()) tensors.emplace_back("optim." + name, t);
  std::map<std::string, std::string> meta = info.extra;
  meta["format"] = kFormat;
  meta["version"] = kVersion;
  meta["epochs_done"] = std::to_string(info.epochs_done);
  meta["rng_seed"] = std::to_string(generator.seed());
  meta["rng_offset"] = std::to_string(generator.offset());
  nn::save_safetensors(path, tensors, meta);
}

CheckpointInfo load_checkpoint(const std::string& path, nn::Module& model, Optimizer& optimizer,
                               Generator& generator) {
  nn::SafeTensors file = nn::load_safetensors(path);
  auto format = file.metadata.find("format");
  DUET_CHECK(format != file.metadata.end() && format->second == kFormat, path, ": not a duet checkpoint");
  const std::string& version = file.metadata["version"];
  DUET_CHECK(version == kVersion || version == kOldVersion, path, ": checkpoint version '", version,
             "', this duet reads versions ", kOldVersion, " and ", kVersion);
  std::map<std::string, Tensor> model_state, optim_state;
  for (auto& [name, t] : file.tensors) {
    if (name.rfind("model.", 0) == 0) model_state[name.substr(6)] = t;
    else if (name.rfind("optim.", 0) == 0) optim_state[name.substr(6)] = t;
    else DUET_FAIL(path, ": unexpected tensor '", name, "' in a checkpoint");
  }
  CheckpointInfo info;
  info.epochs_done = static_cast<int64_t>(parse_u64(file.metadata, "epochs_done", path));
  uint64_t seed = parse_u64(file.metadata, "rng_seed", path), offset = parse_u64(file.metadata, "rng_offset", path);
  // Check the model first (its errors name the tensor and both shapes), then swap in the
  // optimizer state (it checks before it writes), then write the model: a bad file changes nothing.
  try {
    model.check_state_dict(model_state);
    optimizer.load_state(optim_state);
  } catch (const Error& e) {
    DUET_FAIL(path, ": ", e.what());
  }
  model.load_state_dict(model_state);
  generator.manual_seed(seed);
  generator.set_offset(offset);
  for (auto& [key, value] : file.metadata) {
    if (key != "format" && key != "version" && key != "epochs_done" && key != "rng_seed" && key != "rng_offset") {
      info.extra[key] = value;
    }
  }
  return info;
}

}  // namespace duet::optim
