#include "duet/parallel/trainer.h"

#include <chrono>
#include <cmath>

namespace duet::parallel {

Trainer::Trainer(Strategy& strategy, data::DataLoader& train, data::DataLoader& test, int64_t accumulate)
    : strategy_(strategy), train_(train), test_(test), accumulate_(accumulate) {
  DUET_CHECK(accumulate >= 1, "Trainer: accumulate must be at least 1 micro-batch per step, got ", accumulate);
}

std::vector<EpochStats> Trainer::fit(int64_t first_epoch, int64_t last_epoch, const TrainerCallbacks& callbacks) {
  using Clock = std::chrono::steady_clock;
  std::vector<EpochStats> history;
  train_.set_epoch(first_epoch);
  for (int64_t epoch = first_epoch; epoch < last_epoch; ++epoch) {
    StepProgress progress{.epoch = epoch, .steps = (train_.num_batches() + accumulate_ - 1) / accumulate_};
    double loss_sum = 0;
    int64_t correct = 0;
    Clock::time_point start = Clock::now();
    auto step = [&](const std::vector<data::Batch>& micro_batches) {
      StepResult r = micro_batches.size() == 1 ? strategy_.train_step(micro_batches[0])
                                               : strategy_.train_accumulated(micro_batches);
      ++progress.step;
      DUET_CHECK(std::isfinite(r.loss), "training diverged: the loss is ", r.loss, " at epoch ", epoch + 1, ", step ",
                 progress.step, " (try a smaller --lr)");
      loss_sum += r.loss * static_cast<double>(r.count);
      correct += r.correct.value_or(0);
      progress.images += r.count;
      progress.mean_loss = loss_sum / static_cast<double>(progress.images);
      progress.seconds = std::chrono::duration<double>(Clock::now() - start).count();
      if (callbacks.on_step) callbacks.on_step(progress);
    };
    std::vector<data::Batch> micro_batches;
    for (const data::Batch& batch : train_) {
      micro_batches.push_back(batch);
      if (static_cast<int64_t>(micro_batches.size()) < accumulate_) continue;
      step(micro_batches);
      micro_batches.clear();
    }
    if (!micro_batches.empty()) step(micro_batches);  // the epoch's last, shorter step
    EpochStats stats;
    stats.epoch = epoch;
    stats.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    double images = static_cast<double>(std::max<int64_t>(progress.images, 1));
    stats.train_loss = loss_sum / images;
    stats.train_accuracy = static_cast<double>(correct) / images;
    stats.images_per_second = images / std::max(stats.seconds, 1e-9);
    stats.test_accuracy = evaluate(strategy_.model(), test_, strategy_.device());
    history.push_back(stats);
    if (callbacks.on_epoch) callbacks.on_epoch(stats);
  }
  return history;
}

}  // namespace duet::parallel
