#include "duet/optim/checkpoint.h"

#include <charconv>
#include <limits>

#include "duet/nn/safetensors.h"
#include "duet/optim/tensor_checksum.h"

namespace duet::optim {
namespace {

constexpr const char* kFormat = "duet-checkpoint";
// Version 2 added the optimizer's per-parameter update counts ("optim.<index>.step"). Version 1
// files still load: Optimizer::load_state gives their parameters the global step count.
constexpr const char* kVersion = "2";
constexpr const char* kOldVersion = "1";

// A whole number >= 0, digits only: no sign, no spaces, nothing after it (std::stoull took
// "-2" as 2^64 - 2, which became epoch -2).
uint64_t parse_count(const std::map<std::string, std::string>& meta, const std::string& key, const std::string& path,
                     uint64_t max = std::numeric_limits<uint64_t>::max()) {
  auto it = meta.find(key);
  DUET_CHECK(it != meta.end(), path, ": checkpoint metadata lacks '", key, "'");
  const std::string& text = it->second;
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  DUET_CHECK(!text.empty() && ec == std::errc() && end == text.data() + text.size() && value <= max, path,
             ": checkpoint metadata '", key, "' is '", text, "', expected a whole number from 0 to ", max);
  return value;
}

// The metadata key of tensors_checksum. Files written before it existed load with a note.
constexpr const char* kChecksumKey = "tensor_checksum";

bool is_reserved(const std::string& key) {
  return key == "format" || key == "version" || key == "epochs_done" || key == "rng_seed" || key == "rng_offset" ||
         key == kChecksumKey;
}

// The tensors of the file, in name order, for tensors_checksum.
std::map<std::string, Tensor> by_name(const nn::NamedTensors& tensors) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, t] : tensors) out.emplace(name, t);
  return out;
}

}  // namespace

void save_checkpoint(const std::string& path, const nn::Module& model, const Optimizer& optimizer,
                     const Generator& generator, const CheckpointInfo& info) {
  save_checkpoint(path, model, optimizer.state(), generator, info);
}

void save_checkpoint(const std::string& path, const nn::Module& model, const nn::NamedTensors& optimizer_state,
                     const Generator& generator, const CheckpointInfo& info) {
  DUET_CHECK(info.epochs_done >= 0, path, ": epochs_done must be >= 0, got ", info.epochs_done);
  nn::NamedTensors tensors;
  for (auto& [name, t] : model.state_dict()) tensors.emplace_back("model." + name, t);
  for (auto& [name, t] : optimizer_state) tensors.emplace_back("optim." + name, t);
  std::map<std::string, std::string> meta = info.extra;
  meta["format"] = kFormat;
  meta["version"] = kVersion;
  meta["epochs_done"] = std::to_string(info.epochs_done);
  meta["rng_seed"] = std::to_string(generator.seed());
  meta["rng_offset"] = std::to_string(generator.offset());
  meta[kChecksumKey] = tensors_checksum(by_name(tensors));
  nn::save_safetensors(path, tensors, meta);
}

Checkpoint read_checkpoint(const std::string& path) {
  nn::SafeTensors file = nn::load_safetensors(path);
  auto format = file.metadata.find("format");
  DUET_CHECK(format != file.metadata.end() && format->second == kFormat, path, ": not a duet checkpoint");
  const std::string& version = file.metadata["version"];
  DUET_CHECK(version == kVersion || version == kOldVersion, path, ": checkpoint version '", version,
             "', this duet reads versions ", kOldVersion, " and ", kVersion);
  Checkpoint checkpoint;
  checkpoint.path = path;
  auto checksum = file.metadata.find(kChecksumKey);
  if (checksum == file.metadata.end()) {
    checkpoint.notes.push_back(path + " has no checksum of its tensors (an older duet wrote it): loaded unverified");
  } else {
    const std::string computed = tensors_checksum(file.tensors);
    DUET_CHECK(computed == checksum->second, path, ": the tensors do not match the checkpoint's ", kChecksumKey, " (",
               checksum->second, " recorded, ", computed,
               " computed): the file is damaged; nothing was loaded from it");
  }
  for (auto& [name, t] : file.tensors) {
    if (name.rfind("model.", 0) == 0) checkpoint.model_state[name.substr(6)] = t;
    else if (name.rfind("optim.", 0) == 0) checkpoint.optimizer_state[name.substr(6)] = t;
    else DUET_FAIL(path, ": unexpected tensor '", name, "' in a checkpoint");
  }
  checkpoint.info.epochs_done =
      static_cast<int64_t>(parse_count(file.metadata, "epochs_done", path, std::numeric_limits<int64_t>::max()));
  checkpoint.rng_seed = parse_count(file.metadata, "rng_seed", path);
  checkpoint.rng_offset = parse_count(file.metadata, "rng_offset", path);
  for (auto& [key, value] : file.metadata) {
    if (!is_reserved(key)) checkpoint.info.extra[key] = value;
  }
  return checkpoint;
}

void Checkpoint::check_model(const nn::Module& model) const {
  try {
    model.check_state_dict(model_state);
  } catch (const Error& e) {
    DUET_FAIL(path, ": ", e.what());
  }
}

void Checkpoint::restore_model(nn::Module& model) const {
  check_model(model);
  model.load_state_dict(model_state);
}

void Checkpoint::restore_optimizer(Optimizer& optimizer) const {
  try {
    optimizer.load_state(optimizer_state);  // checks everything before it changes anything
  } catch (const Error& e) {
    DUET_FAIL(path, ": ", e.what());
  }
}

void Checkpoint::restore_generator(Generator& generator) const {
  generator.manual_seed(rng_seed);
  generator.set_offset(rng_offset);
}

CheckpointInfo load_checkpoint(const std::string& path, nn::Module& model, Optimizer& optimizer, Generator& generator) {
  Checkpoint checkpoint = read_checkpoint(path);
  // Check the model first (its errors name the tensor and both shapes), then swap in the
  // optimizer state (it checks before it writes), then write the model: a bad file changes nothing.
  checkpoint.check_model(model);
  checkpoint.restore_optimizer(optimizer);
  checkpoint.restore_model(model);
  checkpoint.restore_generator(generator);
  return checkpoint.info;
}

}  // namespace duet::optim
