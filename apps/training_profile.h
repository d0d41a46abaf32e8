// `duet train --profile`: where a training step's time goes, by phase and by kernel. It sums
// the strategy's phase times after every step, and the kernel profiler's totals over the
// training steps only (what evaluation runs is dropped at each epoch's end).
#pragma once

#include <cstdio>
#include <vector>

#include "duet/kernels/profiler.h"
#include "duet/parallel/phase_times.h"

namespace duet::apps {

class TrainingProfile {
 public:
  TrainingProfile();   // turns the kernel profiler and exact GPU phases on
  ~TrainingProfile();  // and off

  void after_step(const parallel::PhaseTimes& phases);  // from the trainer's on_step
  void after_epoch();                                   // drops the evaluation's kernels
  // The phase table, then the kernels, longest first. With several device threads the kernel
  // times are summed over them and no "outside the kernels" line is printed.
  void print(std::FILE* out, double training_seconds, int device_threads) const;

 private:
  int64_t steps_ = 0;
  parallel::PhaseTimes phases_;
  std::vector<kernels::profiler::OpTime> kernels_;
};

}  // namespace duet::apps
