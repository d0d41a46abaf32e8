// Learning-rate schedules, evaluated per epoch: lr(epoch) from the optimizer's base lr.
//
//   optim::StepLR schedule(2, 0.5);
//   for (int64_t epoch = 0; epoch < epochs; ++epoch) {
//     schedule.apply(strategy, base_lr, epoch);  // or an optimizer: anything Schedulable
//     ...
//   }
#pragma once

#include <cstdint>

namespace duet::optim {

// What a schedule drives: an Optimizer, or a parallel::Strategy, whose set_lr reaches every
// replica's optimizer.
class Schedulable {
 public:
  virtual ~Schedulable() = default;
  virtual void set_lr(double lr) = 0;
};

class LRSchedule {
 public:
  virtual ~LRSchedule() = default;
  virtual double lr_at(double base_lr, int64_t epoch) const = 0;
  // Sets target's lr to lr_at(base_lr, epoch), and returns it. `epoch` is whatever unit the
  // schedule counts in: epochs, or steps for a schedule applied every step.
  double apply(Schedulable& target, double base_lr, int64_t epoch) const;
};

// lr * gamma^(epoch / step_size), as torch.optim.lr_scheduler.StepLR.
class StepLR final : public LRSchedule {
 public:
  StepLR(int64_t step_size, double gamma);
  double lr_at(double base_lr, int64_t epoch) const override;

 private:
  int64_t step_size_;
  double gamma_;
};

// Cosine annealing from base_lr to min_lr over total_epochs, as torch's CosineAnnealingLR
// (T_max = total_epochs, eta_min = min_lr): its closed form
//   min_lr + (base_lr - min_lr) * (1 + cos(pi * epoch / total_epochs)) / 2.
// Past total_epochs it keeps following the cosine, back up to base_lr at 2 * total_epochs, as
// PyTorch's does (its recursive step() form agrees with this closed form to 1e-14 there).
class CosineLR final : public LRSchedule {
 public:
  CosineLR(int64_t total_epochs, double min_lr = 0);
  double lr_at(double base_lr, int64_t epoch) const override;

 private:
  int64_t total_epochs_;
  double min_lr_;
};

}  // namespace duet::optim
