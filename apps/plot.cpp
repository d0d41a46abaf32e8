#include "plot.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>

#include "duet/core/error.h"

namespace duet::apps {
namespace {

namespace fs = std::filesystem;

std::string label(const parallel::RunMeasurement& run) {
  return parallel::to_string(run.strategy) +
         (run.strategy == parallel::StrategyKind::single ? "" : " x" + std::to_string(run.devices));
}

}  // namespace

void run_gnuplot(const std::string& png_path, const std::string& data_name, const WritePlot& write_plot) {
  fs::path dir = fs::temp_directory_path() / ("duet-plot-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path script = dir / "plot.gp";
  {
    std::ofstream gp(script);
    fs::path data_path = dir / data_name;
    std::ofstream data(data_path);
    gp << "set output '" << png_path << "'\n";
    write_plot(data, data_path.string(), gp);
  }
  fs::path log = dir / "gnuplot.log";
  std::string command = "gnuplot '" + script.string() + "' > '" + log.string() + "' 2>&1";
  int status = std::system(command.c_str());
  std::ifstream log_file(log);
  std::string said((std::istreambuf_iterator<char>(log_file)), std::istreambuf_iterator<char>());
  fs::remove_all(dir);
  // The shell's 127: no gnuplot to run. Anything else is gnuplot's own complaint.
  DUET_CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 127), "plotting ", png_path,
             ": gnuplot is not installed; install Debian's gnuplot-nox package, which make installs");
  DUET_CHECK(status == 0, "plotting ", png_path, ": gnuplot failed (exit status ", status, "): ", said);
}

void plot_history(const std::vector<parallel::EpochStats>& history, const std::string& png_path,
                  const std::string& title) {
  DUET_CHECK(!history.empty(), "--plot: no epochs to plot");
  run_gnuplot(png_path, "history.dat", [&](std::ostream& out, const std::string& data, std::ostream& gp) {
    for (const auto& e : history) {
      out << e.epoch + 1 << ' ' << e.train_loss << ' ' << e.train_accuracy << ' ' << e.test_accuracy << '\n';
    }
    gp << "set terminal pngcairo noenhanced size 1000,400 font ',10'\n"
       << "set multiplot layout 1,2 title '" << title << "'\n"
       << "set xlabel 'epoch'\nset grid\nset key top right\n"
       << "set ylabel 'loss'\nplot '" << data << "' using 1:2 with linespoints title 'train loss'\n"
       << "set ylabel 'accuracy'\nset key bottom right\n"
       << "plot '" << data << "' using 1:3 with linespoints title 'train acc', "
       << "'' using 1:4 with linespoints title 'test acc'\n"
       << "unset multiplot\n";
  });
}

void plot_phases(const std::vector<parallel::RunMeasurement>& runs, const std::string& png_path,
                 const std::string& title) {
  DUET_CHECK(!runs.empty(), "plot_phases: no runs to plot");
  run_gnuplot(png_path, "phases.dat", [&](std::ostream& out, const std::string& data, std::ostream& gp) {
    out << "run";
    for (size_t i = 0; i < parallel::kNumPhases; ++i) out << ' ' << parallel::name(static_cast<parallel::Phase>(i));
    out << " other\n";
    for (const auto& run : runs) {
      out << '"' << label(run) << '"';
      double timed = 0;
      for (double ms : run.phase_ms) {
        out << ' ' << ms;
        timed += ms;
      }
      // What no phase timed (loading the batch, the step loop, the gaps between phases), so that
      // every bar adds up to its run's ms per step.
      out << ' ' << std::max(0.0, run.ms_per_step - timed) << '\n';
    }
    gp << "set terminal pngcairo noenhanced size 1000,500 font ',10'\n"
       << "set title '" << title << "'\nset ylabel 'ms per step'\nset grid ytics\n"
       << "set style data histograms\nset style histogram rowstacked\nset style fill solid 0.8 border -1\n"
       << "set boxwidth 0.6\nset key outside right\nset key autotitle columnhead\nset yrange [0:*]\n"
       << "colors = '#7f7f7f #17becf #bcbd22 #ff7f0e #9467bd #8c564b #d62728 #1f77b4 #2ca02c #d9d9d9'\n"
       << "plot for [i=2:" << parallel::kNumPhases + 2 << "] '" << data
       << "' using i:xtic(1) lc rgb word(colors, i - 1)\n";
  });
}

void plot_throughput(const std::vector<parallel::RunMeasurement>& runs, const std::string& png_path,
                     const std::string& title) {
  std::map<parallel::StrategyKind, std::vector<const parallel::RunMeasurement*>> by_strategy;
  int max_devices = 1;
  for (const auto& run : runs) {
    by_strategy[run.strategy].push_back(&run);
    max_devices = std::max(max_devices, run.devices);
  }
  DUET_CHECK(!by_strategy.empty(), "plot_throughput: no runs to plot");
  run_gnuplot(png_path, "throughput.dat", [&](std::ostream& out, const std::string& data, std::ostream& gp) {
    std::vector<parallel::StrategyKind> titles;
    for (const auto& [strategy, list] : by_strategy) {
      // single runs on one device, but is drawn across the range as the baseline to beat.
      if (strategy == parallel::StrategyKind::single) {
        out << 1 << ' ' << list.front()->images_per_second << '\n'
            << max_devices << ' ' << list.front()->images_per_second << "\n\n\n";
      } else {
        for (const auto* run : list) out << run->devices << ' ' << run->images_per_second << '\n';
        out << "\n\n";
      }
      titles.push_back(strategy);
    }
    gp << "set terminal pngcairo noenhanced size 800,500 font ',10'\n"
       << "set title '" << title << "'\nset xlabel 'devices'\nset ylabel 'images per second'\nset grid\n"
       << "set xtics 1\nset yrange [0:*]\nset key bottom right\nplot ";
    for (size_t i = 0; i < titles.size(); ++i) {
      gp << (i ? ", " : "") << "'" << data << "' index " << i << " with linespoints title '" << titles[i] << "'"
         << (titles[i] == parallel::StrategyKind::single ? " dashtype 2" : "");
    }
    gp << '\n';
  });
}

void plot_speedup(const CompareReport& report, const std::string& png_path, const std::string& title) {
  const parallel::RunMeasurement* single = nullptr;
  double single_predicted = 0;
  for (size_t i = 0; i < report.runs.size(); ++i) {
    if (report.runs[i].strategy == parallel::StrategyKind::single && i < report.simulated.size() &&
        report.simulated[i]) {
      single = &report.runs[i];
      single_predicted = static_cast<double>(single->batch_size) / report.simulated[i]->step_ms;
    }
  }
  DUET_CHECK(single, "plot_speedup: no predicted single-device run to compare with");
  std::map<parallel::StrategyKind, std::vector<size_t>> by_strategy;
  int max_devices = 1;
  for (size_t i = 0; i < report.runs.size(); ++i) {
    if (report.runs[i].strategy == parallel::StrategyKind::single || i >= report.simulated.size() ||
        !report.simulated[i])
      continue;
    by_strategy[report.runs[i].strategy].push_back(i);
    max_devices = std::max(max_devices, report.runs[i].devices);
  }
  DUET_CHECK(!by_strategy.empty(), "plot_speedup: no parallel runs to plot");
  run_gnuplot(png_path, "speedup.dat", [&](std::ostream& out, const std::string& data, std::ostream& gp) {
    std::vector<std::string> titles;
    for (const auto& [strategy, indices] : by_strategy) {
      for (int predicted = 0; predicted < 2; ++predicted) {
        for (size_t i : indices) {
          const parallel::RunMeasurement& run = report.runs[i];
          const double speedup =
              predicted ? static_cast<double>(run.batch_size) / report.simulated[i]->step_ms / single_predicted
                        : run.images_per_second / single->images_per_second;
          out << run.devices << ' ' << speedup << '\n';
        }
        out << "\n\n";
        titles.push_back(parallel::to_string(strategy) + (predicted ? " predicted" : " measured"));
      }
    }
    gp << "set terminal pngcairo noenhanced size 800,500 font ',10'\n"
       << "set title '" << title << (report.weak_scaling ? ", weak scaling" : ", strong scaling") << "'\n"
       << "set xlabel 'devices'\nset ylabel 'speedup over single-device training'\nset grid\n"
       << "set xtics 1\nset xrange [1:" << max_devices
       << "]\nset yrange [0:*]\nset key top left\nplot x title 'ideal' lw 1 lc 'gray', ";
    for (size_t i = 0; i < titles.size(); ++i) {
      gp << (i ? ", " : "") << "'" << data << "' index " << i << " with linespoints title '" << titles[i] << "' lc "
         << (i / 2 + 1) << (i % 2 ? " dashtype 2" : "");
    }
    gp << '\n';
  });
}

}  // namespace duet::apps
