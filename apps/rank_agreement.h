// Under mpirun every rank must train the same run: ranks started with different flags would
// issue collectives of different sizes (a raw MPI error, or a crash) or train on mismatched
// shards until the timeout. Before the first collective that depends on the settings, the ranks
// compare them.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "duet/nn/module.h"
#include "duet/parallel/comm/communicator.h"
#include "train_args.h"

namespace duet::apps {

using NamedSettings = std::vector<std::pair<std::string, std::string>>;

// What every rank of `duet train` must share, in the order a mismatch is reported: the run
// settings a checkpoint records (placement within a process aside), the epoch it starts from,
// and the model's parameter shapes.
NamedSettings rank_settings(const TrainArgs& args, int64_t first_epoch, const nn::Module& model);

// Compares `settings` across the ranks of `comm` (a hash of each rank's, then, only when they
// differ, the settings themselves) and throws duet::Error naming the first setting that differs
// and its values on rank 0 and on the first rank that differs from it. Every rank must call it
// at the same point; every rank throws the same error.
void check_ranks_agree(parallel::Communicator& comm, const NamedSettings& settings);

}  // namespace duet::apps
