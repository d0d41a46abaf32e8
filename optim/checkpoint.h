// Training checkpoints: the model, the optimizer state, the epoch and the random generator,
// in one safetensors file (tensors "model.*" and "optim.*", the rest in the metadata), so a
// resumed run continues exactly where the saved one stopped.
//
// Two ways to load one. load_checkpoint restores a model, its optimizer and the generator in
// one call. read_checkpoint reads and checks the file without applying it, so that a caller can
// look at its info first (which model? how many epochs?) and then restore the parts where they
// belong: the data-parallel strategies restore one model before their replicas are made, and
// every replica's optimizer from the same state.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "duet/core/generator.h"
#include "duet/nn/module.h"
#include "duet/optim/optimizer.h"

namespace duet::optim {

struct CheckpointInfo {
  int64_t epochs_done = 0;                   // completed epochs, >= 0
  std::map<std::string, std::string> extra;  // free-form (e.g. the model name)
};

// A checkpoint file, read and checked but not applied.
struct Checkpoint {
  std::string path;
  CheckpointInfo info;
  std::map<std::string, Tensor> model_state;      // "model.*" without the prefix
  std::map<std::string, Tensor> optimizer_state;  // "optim.*" without the prefix
  uint64_t rng_seed = 0, rng_offset = 0;
  std::vector<std::string> notes;  // what the caller should tell the user (a file without a checksum)

  // Each throws naming the file and the first tensor that does not fit, and then changes nothing.
  void check_model(const nn::Module& model) const;  // restore_model's checks alone
  void restore_model(nn::Module& model) const;
  void restore_optimizer(Optimizer& optimizer) const;
  void restore_generator(Generator& generator) const;
};

// Atomic (see save_safetensors). `generator` is the one dropout and init draw from. Throws if
// info.epochs_done is negative.
void save_checkpoint(const std::string& path, const nn::Module& model, const Optimizer& optimizer,
                     const Generator& generator, const CheckpointInfo& info);
// The same with the optimizer's state() already taken: a sharded optimizer gathers it from every
// rank (a collective across processes), once, for a checkpoint that one rank writes.
void save_checkpoint(const std::string& path, const nn::Module& model, const nn::NamedTensors& optimizer_state,
                     const Generator& generator, const CheckpointInfo& info);

// Reads `path`; throws naming it if it is not a duet checkpoint of this version, its metadata
// is missing or malformed (an epochs_done that is not a whole number >= 0, say), or its tensors
// do not match the checksum recorded with them (tensor_checksum.h). A file from before duet
// recorded the checksum loads, with a note in `notes`.
Checkpoint read_checkpoint(const std::string& path);

// Restores model, optimizer and generator in place and returns the info. Throws naming the
// file and the first tensor that does not fit; a failed load leaves the model unchanged.
// Reads format versions 1 and 2 (written now). Version 1 lacks the optimizer's per-parameter
// update counts: each parameter with optimizer state gets the global step count instead, which
// is exact when every parameter had a gradient at every step (Optimizer::load_state).
CheckpointInfo load_checkpoint(const std::string& path, nn::Module& model, Optimizer& optimizer, Generator& generator);

}  // namespace duet::optim
