#include "train_report.h"

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "duet/core/generator.h"
#include "epoch_history.h"
#include "plot.h"
#include "run_settings.h"

namespace duet::apps {
namespace {

// A --metrics line: the epoch's numbers, the time of its test-set evaluation, and what tells
// this run from others appended to the file.
nlohmann::json metrics_line(const TrainArgs& args, const TrainSetup& setup, const parallel::EpochStats& e,
                            double eval_seconds) {
  nlohmann::json line = epoch_json(e);
  line["eval_seconds"] = eval_seconds;
  line["model"] = args.model;
  line["optimizer"] = args.optimizer.name;
  line["lr"] = args.optimizer.lr;
  line["batch_size"] = setup.batch_size;
  line["strategy"] = parallel::to_string(args.strategy);
  line["devices"] = setup.strategy->devices();
  line["seed"] = args.seed;
  return line;
}

// The epochs before --resume: from the checkpoint, or else from the --metrics file.
std::vector<parallel::EpochStats> earlier_epochs(const TrainArgs& args, const optim::CheckpointInfo& resumed) {
  auto it = resumed.extra.find("history");
  if (it != resumed.extra.end()) return parse_history(it->second, args.resume);
  return args.metrics.empty() ? std::vector<parallel::EpochStats>{}
                              : read_metrics_history(args.metrics, args, resumed.epochs_done);
}

}  // namespace

TrainReporter::TrainReporter(const TrainArgs& args, TrainSetup& setup, const std::vector<std::string>& notes,
                             const optim::CheckpointInfo* resumed)
    : args_(args), setup_(setup), bar_(stderr, args.epochs) {
  if (!setup_.leader) return;
  for (const std::string& note : notes) std::cout << "note: " << note << "\n";
  for (const std::string& note : setup_.notes) std::cout << "note: " << note << "\n";
  if (resumed) {
    std::cout << "resumed from " << args_.resume << " after epoch " << setup_.first_epoch << "\n";
    run_ = earlier_epochs(args_, *resumed);
    for (const auto& e : run_) {
      if (e.test_accuracy > best_accuracy_) best_accuracy_ = e.test_accuracy, best_epoch_ = e.epoch + 1;
    }
  }
  if (!args_.metrics.empty()) {
    if (setup_.first_epoch > 0) drop_unsaved_epochs(args_.metrics, args_, setup_.first_epoch);
    metrics_.open(args_.metrics, setup_.first_epoch > 0 ? std::ios::app : std::ios::trunc);
    DUET_CHECK(metrics_.is_open(), "cannot write --metrics file ", args_.metrics);
  }
  if (args_.profile) profile_.emplace();
  if (setup_.first_epoch >= args_.epochs) return;  // report() says there is nothing to do
  std::cout << "training " << args_.model << " (" << setup_.strategy->model().num_parameters() << " parameters) on "
            << setup_.strategy->devices() << ": " << setup_.train_images << " images, batch " << setup_.batch_size
            << (args_.accumulate > 1 ? " x " + std::to_string(args_.accumulate) + " micro-batches" : "") << ", "
            << args_.optimizer.name << " lr " << args_.optimizer.lr << ", epochs " << setup_.first_epoch + 1 << ".."
            << args_.epochs << std::endl;
}

parallel::TrainerCallbacks TrainReporter::callbacks() {
  parallel::TrainerCallbacks callbacks;
  if (!setup_.leader) {
    // zero1's optimizer state is sharded over the processes: the leader's checkpoint gathers
    // it from every rank, at the same point of every epoch (after_epoch).
    if (!args_.save.empty() && setup_.comm && args_.strategy == parallel::StrategyKind::zero1) {
      callbacks.on_epoch = [this](const parallel::EpochStats&) { (void)setup_.strategy->optimizer().state(); };
    }
    return callbacks;
  }
  callbacks.on_step = [this](const parallel::StepProgress& p) {
    bar_.update(p);
    if (profile_) profile_->after_step(setup_.strategy->last_phases());
    trained_ = std::chrono::steady_clock::now();
  };
  callbacks.on_epoch = [this](const parallel::EpochStats& e) { after_epoch(e); };
  return callbacks;
}

void TrainReporter::after_epoch(const parallel::EpochStats& e) {
  const double eval_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - trained_).count();
  if (profile_) profile_->after_epoch();
  bar_.finish();
  std::printf("epoch %2lld  loss %.4f  train acc %.3f  test acc %.3f  %.1f s  %.0f img/s\n",
              static_cast<long long>(e.epoch + 1), e.train_loss, e.train_accuracy, e.test_accuracy, e.seconds,
              e.images_per_second);
  std::fflush(stdout);
  run_.push_back(e);
  // The checkpoint first: an epoch is in --metrics only once it is saved, so that a run resumed
  // after a failed save does not write that epoch's line a second time.
  std::optional<optim::CheckpointInfo> saved;
  // Taken once for both files: under zero1 across processes it is gathered from every rank,
  // which joins in callbacks().
  nn::NamedTensors optimizer_state;
  if (!args_.save.empty()) {
    optimizer_state = setup_.strategy->optimizer().state();
    saved = save(e, optimizer_state);
  }
  if (metrics_.is_open()) metrics_ << metrics_line(args_, setup_, e, eval_seconds).dump() << "\n" << std::flush;
  if (saved) save_best(e, *saved, optimizer_state);
}

optim::CheckpointInfo TrainReporter::save(const parallel::EpochStats& e, const nn::NamedTensors& optimizer_state) {
  optim::CheckpointInfo info{.epochs_done = e.epoch + 1, .extra = run_settings(args_)};
  info.extra["history"] = history_text(run_);
  optim::save_checkpoint(args_.save, setup_.strategy->model(), optimizer_state, default_generator(), info);
  return info;
}

void TrainReporter::save_best(const parallel::EpochStats& e, const optim::CheckpointInfo& info,
                              const nn::NamedTensors& optimizer_state) {
  if (e.test_accuracy <= best_accuracy_) return;
  best_accuracy_ = e.test_accuracy, best_epoch_ = e.epoch + 1;
  // A run that diverges without a NaN would otherwise overwrite its last good weights.
  optim::save_checkpoint(args_.save + ".best", setup_.strategy->model(), optimizer_state, default_generator(), info);
}

void TrainReporter::interrupted() {
  if (setup_.leader) bar_.finish();
}

int TrainReporter::report(const std::vector<parallel::EpochStats>& history) {
  if (!setup_.leader) return 0;
  if (history.empty()) {
    std::cout << "nothing to do: the checkpoint already has " << setup_.first_epoch << " of " << args_.epochs
              << " epochs\n";
    return 0;
  }
  double seconds = 0;
  for (const auto& e : history) seconds += e.seconds;
  if (profile_) profile_->print(stdout, seconds, setup_.device_threads);
  if (!args_.save.empty()) {
    std::printf("best test acc %.3f at epoch %lld: %s.best\n", best_accuracy_, static_cast<long long>(best_epoch_),
                args_.save.c_str());
  }
  std::printf("test acc %.2f, %.1f sec/epoch on %s\n", history.back().test_accuracy,
              seconds / static_cast<double>(history.size()), setup_.strategy->devices().c_str());
  if (!args_.plot.empty()) {
    plot_history(run_, args_.plot, args_.model + " on Fashion-MNIST");
    std::cout << "wrote " << args_.plot
              << (run_.size() > history.size() ? " (the whole run, with the epochs before --resume)" : "") << "\n";
  }
  return 0;
}

}  // namespace duet::apps
