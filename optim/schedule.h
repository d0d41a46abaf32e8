// Learning-rate schedules, evaluated per epoch: lr(epoch) from the optimizer's base lr.
#pragma once

#include <cstdint>

namespace duet::optim {

class Optimizer;

class LRSchedule {
 public:
  virtual ~LRSchedule() = default;
  virtual double lr_at(double base_lr, int64_t epoch) const = 0;
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
