#include "train_report.h"

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "duet/core/generator.h"
#include "duet/optim/checkpoint.h"
#include "plot.h"
#include "run_settings.h"

namespace duet::apps {
namespace {

nlohmann::json epoch_json(const TrainArgs& args, const parallel::EpochStats& e) {
  return {{"epoch", e.epoch + 1},         {"model", args.model},
          {"train_loss", e.train_loss},   {"train_acc", e.train_accuracy},
          {"test_acc", e.test_accuracy},  {"seconds", e.seconds},
          {"images_per_second", e.images_per_second}};
}

}  // namespace

TrainReporter::TrainReporter(const TrainArgs& args, TrainSetup& setup, const std::vector<std::string>& notes)
    : args_(args), setup_(setup), bar_(stderr, args.epochs) {
  if (!setup_.leader) return;
  for (const std::string& note : notes) std::cout << "note: " << note << "\n";
  if (!args_.resume.empty()) std::cout << "resumed from " << args_.resume << " after epoch " << setup_.first_epoch << "\n";
  if (!args_.metrics.empty()) {
    metrics_.open(args_.metrics, setup_.first_epoch > 0 ? std::ios::app : std::ios::trunc);
    DUET_CHECK(metrics_.is_open(), "cannot write --metrics file ", args_.metrics);
  }
  if (args_.profile) profile_.emplace();
  if (setup_.first_epoch >= args_.epochs) return;  // report() says there is nothing to do
  std::cout << "training " << args_.model << " (" << setup_.strategy->model().num_parameters() << " parameters) on "
            << setup_.strategy->devices() << ": " << setup_.train_images << " images, batch " << args_.batch_size
            << ", " << args_.optimizer.name << " lr " << args_.optimizer.lr << ", epochs " << setup_.first_epoch + 1
            << ".." << args_.epochs << std::endl;
}

parallel::TrainerCallbacks TrainReporter::callbacks() {
  parallel::TrainerCallbacks callbacks;
  if (!setup_.leader) return callbacks;
  callbacks.on_step = [this](const parallel::StepProgress& p) {
    bar_.update(p);
    if (profile_) profile_->after_step(setup_.strategy->last_phases());
  };
  callbacks.on_epoch = [this](const parallel::EpochStats& e) { after_epoch(e); };
  return callbacks;
}

void TrainReporter::after_epoch(const parallel::EpochStats& e) {
  if (profile_) profile_->after_epoch();
  bar_.finish();
  std::printf("epoch %2lld  loss %.4f  train acc %.3f  test acc %.3f  %.1f s  %.0f img/s\n",
              static_cast<long long>(e.epoch + 1), e.train_loss, e.train_accuracy, e.test_accuracy, e.seconds,
              e.images_per_second);
  std::fflush(stdout);
  if (metrics_.is_open()) metrics_ << epoch_json(args_, e).dump() << "\n" << std::flush;
  if (!args_.save.empty()) {
    optim::save_checkpoint(args_.save, setup_.strategy->model(), setup_.strategy->optimizer(), default_generator(),
                           {.epochs_done = e.epoch + 1, .extra = run_settings(args_)});
  }
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
  std::printf("test acc %.2f, %.1f sec/epoch on %s\n", history.back().test_accuracy,
              seconds / static_cast<double>(history.size()), setup_.strategy->devices().c_str());
  if (!args_.plot.empty()) {
    plot_history(history, args_.plot, args_.model + " on Fashion-MNIST");
    std::cout << "wrote " << args_.plot << "\n";
  }
  return 0;
}

}  // namespace duet::apps
