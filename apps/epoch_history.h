// A run's epochs as JSON: one object per epoch in --metrics files and in a checkpoint's
// "history" metadata, and read back from either, so that --plot after --resume draws the
// whole run.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "duet/parallel/trainer.h"
#include "train_args.h"

namespace duet::apps {

// {"epoch": 1 (1-based), "train_loss", "train_acc", "test_acc", "seconds", "images_per_second"}
nlohmann::json epoch_json(const parallel::EpochStats& e);
// The inverse; throws duet::Error naming `source` when a field is missing or not a number.
parallel::EpochStats epoch_from_json(const nlohmann::json& j, const std::string& source);

// A JSON array of epoch_json objects, and back.
std::string history_text(const std::vector<parallel::EpochStats>& history);
std::vector<parallel::EpochStats> parse_history(const std::string& text, const std::string& source);

// The epochs 1..epochs_done of this run from a --metrics file: lines of the same model and
// seed, the last one of each epoch (a run resumed before appends its epochs again). Epochs the
// file lacks are left out; a file that cannot be read gives none.
std::vector<parallel::EpochStats> read_metrics_history(const std::string& path, const TrainArgs& args,
                                                       int64_t epochs_done);

// Before a resumed run appends to --metrics: removes this run's lines (same model and seed) of
// the epochs after `epochs_done`, which a run that stopped before saving them had written, so
// that every epoch is in the file once. Other lines stay as they are; a file without such lines
// is not rewritten. Throws duet::Error naming `path` if it cannot be rewritten.
void drop_unsaved_epochs(const std::string& path, const TrainArgs& args, int64_t epochs_done);

}  // namespace duet::apps
