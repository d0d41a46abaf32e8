// `duet train`, parts 2 and 3: what the leader shows and writes while a run trains (progress
// bar, a line per epoch, --metrics, --save and its .best, --profile), and its final report
// (the d2l-style last line, the profile, --plot of the whole run).
#pragma once

#include <chrono>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "duet/optim/checkpoint.h"
#include "duet/parallel/trainer.h"
#include "progress.h"
#include "train_args.h"
#include "train_setup.h"
#include "training_profile.h"

namespace duet::apps {

class TrainReporter {
 public:
  // Prints the notes and the run's header line, and opens --metrics (throws duet::Error naming
  // it if it cannot be written). `resumed`: the info of the checkpoint the run continues, whose
  // epochs --plot draws too and whose best test accuracy .best must beat. Only the leader
  // reports; the other ranks' reporter does nothing.
  TrainReporter(const TrainArgs& args, TrainSetup& setup, const std::vector<std::string>& notes,
                const optim::CheckpointInfo* resumed);

  parallel::TrainerCallbacks callbacks();
  void interrupted();  // ends the progress bar's line before an error is printed
  // The last line, the profile and the plot; returns the exit code. Throws duet::Error if the
  // plot cannot be drawn.
  int report(const std::vector<parallel::EpochStats>& history);

 private:
  void after_epoch(const parallel::EpochStats& e);
  // --save NAME after every epoch; returns what it recorded.
  optim::CheckpointInfo save(const parallel::EpochStats& e, const nn::NamedTensors& optimizer_state);
  // NAME.best when the test accuracy is the best so far.
  void save_best(const parallel::EpochStats& e, const optim::CheckpointInfo& info,
                 const nn::NamedTensors& optimizer_state);

  const TrainArgs& args_;
  TrainSetup& setup_;
  ProgressBar bar_;
  std::optional<TrainingProfile> profile_;
  std::ofstream metrics_;
  std::vector<parallel::EpochStats> run_;  // every epoch of the run, those before --resume too
  double best_accuracy_ = -1;              // of the run's epochs so far
  int64_t best_epoch_ = 0;                 // 1-based; 0: none yet
  // When the epoch's last training step ended, so when its evaluation began (--metrics eval_seconds).
  std::chrono::steady_clock::time_point trained_;
};

}  // namespace duet::apps
