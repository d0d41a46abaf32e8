#include "duet/optim/schedule.h"

#include <cmath>
#include <numbers>

#include "duet/core/error.h"

namespace duet::optim {

double LRSchedule::apply(Schedulable& target, double base_lr, int64_t epoch) const {
  const double lr = lr_at(base_lr, epoch);
  target.set_lr(lr);
  return lr;
}

StepLR::StepLR(int64_t step_size, double gamma) : step_size_(step_size), gamma_(gamma) {
  DUET_CHECK(step_size > 0 && gamma > 0, "StepLR: step_size and gamma must be positive");
}

double StepLR::lr_at(double base_lr, int64_t epoch) const {
  return base_lr * std::pow(gamma_, static_cast<double>(epoch / step_size_));
}

CosineLR::CosineLR(int64_t total_epochs, double min_lr) : total_epochs_(total_epochs), min_lr_(min_lr) {
  DUET_CHECK(total_epochs > 0 && min_lr >= 0, "CosineLR: total_epochs must be positive and min_lr >= 0");
}

double CosineLR::lr_at(double base_lr, int64_t epoch) const {
  const double progress = static_cast<double>(epoch) / static_cast<double>(total_epochs_);
  return min_lr_ + (base_lr - min_lr_) * (1 + std::cos(std::numbers::pi * progress)) / 2;
}

}  // namespace duet::optim
