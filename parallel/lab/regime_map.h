// The regime map (`duet regime`): which strategy trains fastest for each model over each link.
// A sweep measures every strategy on one device count and predicts it on others; these
// functions turn its points into speedups over single-device training, and each (model, link)
// into its winner and the winner's margin over the runner-up.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "duet/parallel/strategy_kind.h"

namespace duet::parallel {

// One strategy on one model, link and device count, measured or predicted by the cost model.
struct RegimePoint {
  std::string model;
  std::string link;
  StrategyKind strategy = StrategyKind::single;
  int devices = 1;
  bool measured = true;  // false: the cost model's prediction
  int64_t batch_size = 0;
  double ms_per_step = 0;
  double images_per_second = 0;
  // Over single on the same model and link, measured over measured and predicted over predicted
  // (fill_speedups); unset where that single point is missing.
  std::optional<double> speedup;
  // Measured points: the per-step check's worst step in float ulps (unset without the check),
  // the cost model's step for this very run under the compute load measured just before it, and
  // that load (the run's devices at once over one device alone).
  std::optional<double> max_check_ulps;
  std::optional<double> predicted_ms;
  std::optional<double> compute_slowdown;
};

// Sets every point's speedup: its images per second over single's on the same model and link,
// both measured or both predicted.
void fill_speedups(std::vector<RegimePoint>& points);

// The fastest strategy of one (model, link): single, or one of the others on `devices` devices.
struct RegimeCell {
  std::string model;
  std::string link;
  StrategyKind winner = StrategyKind::single;
  std::optional<StrategyKind> runner_up;  // unset when only one strategy ran
  // The winner's images per second over the runner-up's, minus 1 (0.12: 12% faster).
  double margin = 0;
};

// One cell per (model, link), in the order the points first name them, among the points that
// are `measured` (or predicted) and either single or on `devices` devices. The fastest is the
// one with the most images per second (the first of equals, in the points' order).
std::vector<RegimeCell> regime_winners(const std::vector<RegimePoint>& points, bool measured, int devices);

// "ddp +12%": the winner and its margin, in whole percent from 10% up and to a tenth below;
// the winner's name alone when there was no runner-up.
std::string cell_label(const RegimeCell& cell);

}  // namespace duet::parallel
