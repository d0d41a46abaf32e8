// `duet regime`'s two plots, drawn by gnuplot (plot.h).
#pragma once

#include <string>

#include "regime_report.h"

namespace duet::apps {

// The regime map: a cell per link (rows) and model (columns), coloured by the strategy that
// trained fastest there, measured (single, or report.measured_devices devices), and labelled
// with it and its margin over the runner-up ("ddp +12%").
void plot_regime_map(const RegimeReport& report, const std::string& png_path);

// The cost model's speedup over single-device training against the device count (1 and
// report.predicted_devices), a panel per model (rows) and parallel strategy (columns), a line
// per link; the measured speedups as filled circles in the links' colours.
void plot_regime_speedup(const RegimeReport& report, const std::string& png_path);

}  // namespace duet::apps
