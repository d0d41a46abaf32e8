// Plots as PNG files, drawn by gnuplot (Debian's gnuplot-nox).
#pragma once

#include <string>
#include <vector>

#include "compare_report.h"
#include "duet/parallel/lab/experiment.h"
#include "duet/parallel/trainer.h"

namespace duet::apps {

// `duet train --plot`: loss on the left, train and test accuracy on the right, per epoch.
// Every plot function throws duet::Error if gnuplot is missing or fails.
void plot_history(const std::vector<parallel::EpochStats>& history, const std::string& png_path,
                  const std::string& title);

// `duet compare`: one stacked bar of mean milliseconds per phase for every run, topped by
// "other", the time no phase took, so that each bar is the run's ms per step.
void plot_phases(const std::vector<parallel::RunMeasurement>& runs, const std::string& png_path,
                 const std::string& title);

// `duet compare --devices 1,2,4`: images per second against the device count, a line per
// strategy (single-device training as a flat line).
void plot_throughput(const std::vector<parallel::RunMeasurement>& runs, const std::string& png_path,
                     const std::string& title);

// `duet compare`: speedup over single-device training (img/s) against the device count, a solid
// line per strategy for the measurement and a dashed one for the cost model's prediction, and
// the ideal speedup N as a thin line.
void plot_speedup(const CompareReport& report, const std::string& png_path, const std::string& title);

}  // namespace duet::apps
