#include "training_profile.h"

namespace duet::apps {

TrainingProfile::TrainingProfile() {
  kernels::profiler::take();  // start from zero
  kernels::profiler::set_enabled(true);
  parallel::set_exact_gpu_phases(true);  // on a GPU, phases as the device spends them
}

TrainingProfile::~TrainingProfile() {
  kernels::profiler::set_enabled(false);
  parallel::set_exact_gpu_phases(false);
}

void TrainingProfile::after_step(const parallel::PhaseTimes& phases) {
  ++steps_;
  for (size_t i = 0; i < parallel::kNumPhases; ++i) phases_.ms[i] += phases.ms[i];
  kernels::profiler::accumulate(kernels_, kernels::profiler::take());
}

void TrainingProfile::after_epoch() { kernels::profiler::take(); }

void TrainingProfile::print(std::FILE* out, double training_seconds, int device_threads) const {
  if (steps_ == 0) return;
  const double steps = static_cast<double>(steps_);
  const double step_ms = training_seconds * 1e3 / steps;
  std::fprintf(out, "\nprofile: %lld training steps, %.3f ms per step (evaluation excluded)\n",
               static_cast<long long>(steps_), step_ms);
  std::fprintf(out, "%-32s %10s %7s\n", "phase", "ms/step", "%");
  for (size_t i = 0; i < parallel::kNumPhases; ++i) {
    if (phases_.ms[i] == 0) continue;
    const double ms = phases_.ms[i] / steps;
    std::fprintf(out, "%-32s %10.3f %7.1f\n", parallel::name(static_cast<parallel::Phase>(i)), ms, 100 * ms / step_ms);
  }
  std::fprintf(out, "%-32s %10s %10s %7s\n", "kernel", "calls/step", "ms/step", "%");
  double kernel_ms = 0;
  for (const auto& k : kernels_) {
    const double ms = k.seconds * 1e3 / steps;
    kernel_ms += ms;
    std::fprintf(out, "%-32s %10.1f %10.3f %7.1f\n", k.op.c_str(), static_cast<double>(k.calls) / steps, ms,
                 100 * ms / step_ms);
  }
  if (device_threads == 1) {
    // The rest of the step: building the graph, the engine, allocation, waiting for the loader.
    std::fprintf(out, "%-32s %10s %10.3f %7.1f\n", "(outside the kernels)", "", step_ms - kernel_ms,
                 100 * (step_ms - kernel_ms) / step_ms);
  } else {
    std::fprintf(out, "kernel times are summed over the %d device threads, which run at the same time\n",
                 device_threads);
  }
}

}  // namespace duet::apps
