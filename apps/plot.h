// Plots as PNG files, drawn by gnuplot (Debian's gnuplot-nox).
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "compare_report.h"
#include "duet/parallel/lab/experiment.h"
#include "duet/parallel/trainer.h"

namespace duet::apps {

// What a plot writes: its data to `data`, a file at `data_path` in a scratch folder, and the
// gnuplot commands that draw it to `gp`.
using WritePlot = std::function<void(std::ostream& data, const std::string& data_path, std::ostream& gp)>;

// Runs the gnuplot script that write_plot writes, with its data file data_name beside it in a
// scratch folder, after a `set output` to png_path. Its `set terminal` must say noenhanced (that
// command resets the terminal's options), or names such as buffer_sync are drawn with a
// subscript. Throws duet::Error if gnuplot is missing or fails.
void run_gnuplot(const std::string& png_path, const std::string& data_name, const WritePlot& write_plot);

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
