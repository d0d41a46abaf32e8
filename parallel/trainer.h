// Trainer: the epoch loop shared by `duet train`, `duet compare` and library users. It runs a
// Strategy over a DataLoader, evaluates on the test set after every epoch, and reports
// progress through callbacks; printing is left to the caller.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "duet/data/dataloader.h"
#include "duet/parallel/strategy.h"

namespace duet::parallel {

struct StepProgress {
  int64_t epoch = 0;     // 0-based
  int64_t step = 0;      // optimizer steps, 1-based within the epoch
  int64_t steps = 0;     // optimizer steps per epoch
  int64_t images = 0;    // seen so far this epoch
  double mean_loss = 0;  // running mean over this epoch's steps
  double seconds = 0;    // since the epoch started
};

struct EpochStats {
  int64_t epoch = 0;  // 0-based
  double train_loss = 0;
  double train_accuracy = 0;  // 0 unless the targets are class labels (StepResult::correct)
  double test_accuracy = 0;
  double seconds = 0;            // training time of the epoch (evaluation excluded)
  double images_per_second = 0;  // training throughput
};

struct TrainerCallbacks {
  std::function<void(const StepProgress&)> on_step;
  std::function<void(const EpochStats&)> on_epoch;  // after evaluation
};

class Trainer {
 public:
  // accumulate: micro-batches (the loader's batches) per optimizer step, through
  // Strategy::train_accumulated; an epoch's last step takes what is left.
  Trainer(Strategy& strategy, data::DataLoader& train, data::DataLoader& test, int64_t accumulate = 1);

  // Runs epochs first_epoch .. last_epoch-1. Throws duet::Error naming the epoch and step if a
  // loss is not finite.
  std::vector<EpochStats> fit(int64_t first_epoch, int64_t last_epoch, const TrainerCallbacks& callbacks = {});

 private:
  Strategy& strategy_;
  data::DataLoader& train_;
  data::DataLoader& test_;
  int64_t accumulate_;
};

}  // namespace duet::parallel
