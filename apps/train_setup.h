// `duet train`, part 1: everything a run needs, built and checked from the flags before the
// first step (train_report.h prints and writes while it runs; train_command.cpp joins them).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "duet/data/dataloader.h"
#include "duet/optim/checkpoint.h"
#include "duet/parallel/comm/communicator.h"
#include "duet/parallel/strategy.h"
#include "save_lock.h"
#include "train_args.h"

namespace duet::apps {

struct TrainSetup {
  std::shared_ptr<parallel::Communicator> comm;  // --comm mpi: this process's rank
  bool leader = true;                            // the one process that prints and writes files
  int64_t train_images = 0;
  int64_t batch_size = 0;          // the global batch used: --batch-size, at most the training set
  std::vector<std::string> notes;  // what was adjusted, and why
  std::unique_ptr<data::DataLoader> train, test;
  std::unique_ptr<parallel::Strategy> strategy;
  int64_t first_epoch = 0;              // epochs a resumed checkpoint has done
  int device_threads = 1;               // threads that run kernels at once (for --profile)
  std::unique_ptr<SaveLock> save_lock;  // the leader's, with --save: one writer per checkpoint
};

// The flag combinations that cannot work, as one message; empty when the flags are fine.
std::string check_combination(const TrainArgs& args);

// Fills `setup` step by step (communicator, output paths, data, model, strategy), so that a
// step that throws duet::Error leaves what came before it, the communicator above all, in
// place. With a checkpoint (--resume), every replica starts from its model and optimizer
// state, and the run from its generator and epoch.
void set_up(const TrainArgs& args, TrainSetup& setup, const optim::Checkpoint* checkpoint);

}  // namespace duet::apps
