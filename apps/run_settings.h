// The settings that make a `duet train` run what it is (model, optimizer and its
// hyperparameters, batch size, seed, epochs, micro-batches, SyncBatchNorm, strategy and
// devices), as a checkpoint records them, and how --resume continues that run:
//   - every recorded setting must be a value its flag would take (a known model, momentum from
//     0 to 1, a finite lr >= 0, ...), or the checkpoint is refused naming the field;
//   - a setting the user did not give on the command line takes the checkpoint's value, so
//     `duet train --resume FILE` alone continues the run exactly;
//   - another model or optimizer is refused, naming both values: the checkpoint's tensors
//     belong to them;
//   - any other change (a new --lr, more --epochs, another strategy) goes through, with a note;
//   - the placement flags (--strategy, --comm, --device, --devices, --device-ids) only make sense
//     together: give any of them and the checkpoint's placement is left out as a whole;
//   - a checkpoint from before duet recorded these settings loads, with a note of what is assumed.
// Without --resume, only --lr is settled here: an SGD run takes its model's default (default_lr).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "train_args.h"

namespace duet::apps {

// The options the user gave, by long name ("--lr").
using GivenFlags = std::set<std::string>;

// For a checkpoint's metadata.
std::map<std::string, std::string> run_settings(const TrainArgs& args);

// Completes `args` from the checkpoint's metadata (null without --resume) and the model's
// default lr, and returns the notes to print. Throws duet::Error naming `checkpoint_path`, the
// setting and both values on a conflict, or a setting it cannot read.
std::vector<std::string> settle_run_settings(TrainArgs& args, const GivenFlags& given,
                                             const std::map<std::string, std::string>* checkpoint,
                                             const std::string& checkpoint_path);

// SGD's learning rate that trains `model` well in 10 epochs at batch 256 (docs/experiments.md);
// Adam's is PyTorch's default, 0.001, for every model.
double default_lr(const std::string& model, const std::string& optimizer);

}  // namespace duet::apps
