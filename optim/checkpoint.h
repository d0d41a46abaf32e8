// Training checkpoints: the model, the optimizer state, the epoch and the random generator,
// in one safetensors file (tensors "model.*" and "optim.*", the rest in the metadata), so a
// resumed run continues exactly where the saved one stopped.
#pragma once

#include <map>
#include <string>

#include "duet/core/generator.h"
#include "duet/nn/module.h"
#include "duet/optim/optimizer.h"

namespace duet::optim {

struct CheckpointInfo {
  int64_t epochs_done = 0;                     // completed epochs
  std::map<std::string, std::string> extra;    // free-form (e.g. the model name)
};

// Atomic (see save_safetensors). `generator` is the one dropout and init draw from.
void save_checkpoint(const std::string& path, const nn::Module& model, const Optimizer& optimizer,
                     const Generator& generator, const CheckpointInfo& info);

// Restores model, optimizer and generator in place and returns the info. Throws naming the
// file and the first tensor that does not fit; a failed load leaves the model unchanged.
// Reads format versions 1 and 2 (written now). Version 1 lacks the optimizer's per-parameter
// update counts: each parameter with optimizer state gets the global step count instead, which
// is exact when every parameter had a gradient at every step (Optimizer::load_state).
CheckpointInfo load_checkpoint(const std::string& path, nn::Module& model, Optimizer& optimizer,
                               Generator& generator);

}  // namespace duet::optim
