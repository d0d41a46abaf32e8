// `duet train`, parts 2 and 3: what the leader shows and writes while a run trains (progress
// bar, a line per epoch, --metrics, --save, --profile), and its final report (the d2l-style
// last line, the profile, --plot).
#pragma once

#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "duet/parallel/trainer.h"
#include "progress.h"
#include "train_args.h"
#include "train_setup.h"
#include "training_profile.h"

namespace duet::apps {

class TrainReporter {
 public:
  // Opens --metrics (throws duet::Error naming it if it cannot be written) and prints the
  // notes and the run's header line. Only the leader reports; the other ranks' reporter does
  // nothing.
  TrainReporter(const TrainArgs& args, TrainSetup& setup, const std::vector<std::string>& notes);

  parallel::TrainerCallbacks callbacks();
  void interrupted();  // ends the progress bar's line before an error is printed
  // The last line, the profile and the plot; returns the exit code. Throws duet::Error if the
  // plot cannot be drawn.
  int report(const std::vector<parallel::EpochStats>& history);

 private:
  void after_epoch(const parallel::EpochStats& e);

  const TrainArgs& args_;
  TrainSetup& setup_;
  ProgressBar bar_;
  std::optional<TrainingProfile> profile_;
  std::ofstream metrics_;
};

}  // namespace duet::apps
