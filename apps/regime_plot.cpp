#include "regime_plot.h"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "duet/core/error.h"
#include "plot.h"

namespace duet::apps {
namespace {

using parallel::RegimePoint;
using parallel::StrategyKind;

// One colour per strategy, the same in every regime map.
std::string strategy_color(StrategyKind kind) {
  switch (kind) {
    case StrategyKind::single:
      return "#9e9e9e";
    case StrategyKind::dp:
      return "#f28e2b";
    case StrategyKind::ddp:
      return "#4e79a7";
    case StrategyKind::ddp_d2l:
      return "#59a14f";
    case StrategyKind::ddp_unbucketed:
      return "#b07aa1";
    case StrategyKind::ddp_naive:
      return "#e15759";
  }
  return "#000000";
}

// The links' colours, in the order the sweep ran them.
std::string link_color(size_t index) {
  static const char* const colors[] = {"#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#a6761d", "#666666"};
  return colors[index % (sizeof colors / sizeof colors[0])];
}

std::string title_of(const RegimeReport& r) {
  return "batch " + std::to_string(r.batch_size) + ", " + std::to_string(r.steps) + " steps, " + r.device_kind +
         ", duet " + r.build.built_commit + ", " + r.started_utc;
}

const RegimePoint* find_point(const RegimeReport& r, const std::string& model, const std::string& link,
                              StrategyKind strategy, int devices, bool measured) {
  for (const RegimePoint& p : r.points) {
    if (p.model == model && p.link == link && p.strategy == strategy && p.devices == devices && p.measured == measured)
      return &p;
  }
  return nullptr;
}

std::string number_or_nan(const std::optional<double>& value) {
  if (!value) return "NaN";
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", *value);
  return text;
}

}  // namespace

void plot_regime_map(const RegimeReport& report, const std::string& png_path) {
  const std::vector<parallel::RegimeCell> cells =
      parallel::regime_winners(report.points, true, report.measured_devices);
  DUET_CHECK(!cells.empty(), "plot_regime_map: no measured points to plot");
  const int columns = static_cast<int>(report.models.size()), rows = static_cast<int>(report.links.size());
  run_gnuplot(png_path, "regime.dat", [&](std::ostream& out, const std::string& data, std::ostream& gp) {
    // A line per cell: its column and row, the winner's colour, and the label.
    for (const parallel::RegimeCell& cell : cells) {
      const auto x = std::find(report.models.begin(), report.models.end(), cell.model) - report.models.begin();
      const auto y = std::find(report.links.begin(), report.links.end(), cell.link) - report.links.begin();
      out << x << ' ' << y << ' ' << std::stoi(strategy_color(cell.winner).substr(1), nullptr, 16) << " \""
          << parallel::cell_label(cell) << "\"\n";
    }
    gp << "set terminal pngcairo noenhanced size " << std::max(760, 300 + 190 * columns) << "," << 200 + 70 * rows
       << " font ',11'\n"
       << "set title \"Fastest strategy, measured: single, or " << report.measured_devices
       << " devices; its margin over the runner-up\\n"
       << title_of(report) << "\" font ',10'\n"
       << "set xrange [-0.5:" << columns - 0.5 << "]\nset yrange [" << rows - 0.5 << ":-0.5]\n"
       << "set tics scale 0\nset xtics (";
    for (int i = 0; i < columns; ++i) gp << (i ? ", " : "") << "'" << report.models[i] << "' " << i;
    gp << ")\nset ytics (";
    for (int i = 0; i < rows; ++i) gp << (i ? ", " : "") << "'" << report.links[i] << "' " << i;
    gp << ")\nset xlabel 'model'\nset ylabel 'link'\nset key outside right title 'winner'\n"
       << "plot '" << data << "' using 1:2:(0.5):(0.5):3 with boxxyerror fs solid 0.85 lc rgb variable notitle, '"
       << data << "' using 1:2:4 with labels font ',12' notitle";
    // The key: a swatch per strategy the sweep ran.
    for (StrategyKind s : report.strategies) {
      gp << ", keyentry with boxes fs solid 0.85 fc rgb '" << strategy_color(s) << "' title '" << parallel::to_string(s)
         << "'";
    }
    gp << '\n';
  });
}

void plot_regime_speedup(const RegimeReport& report, const std::string& png_path) {
  std::vector<StrategyKind> parallel_strategies;
  for (StrategyKind s : report.strategies) {
    if (s != StrategyKind::single) parallel_strategies.push_back(s);
  }
  DUET_CHECK(!parallel_strategies.empty(), "plot_regime_speedup: no parallel strategy to plot");
  double top = 1;
  for (const RegimePoint& p : report.points) top = std::max(top, p.speedup.value_or(0));
  run_gnuplot(png_path, "speedup.dat", [&](std::ostream& out, const std::string& data, std::ostream& gp) {
    // A block per (model, strategy, link): devices, predicted speedup, measured speedup (NaN where
    // not measured), from 1 device (single, 1 by definition) up.
    for (const std::string& model : report.models) {
      for (StrategyKind s : parallel_strategies) {
        for (const std::string& link : report.links) {
          out << "1 1 NaN\n";
          for (int n : report.predicted_devices) {
            const RegimePoint* predicted = find_point(report, model, link, s, n, false);
            const RegimePoint* measured = find_point(report, model, link, s, n, true);
            out << n << ' ' << number_or_nan(predicted ? predicted->speedup : std::nullopt) << ' '
                << number_or_nan(measured ? measured->speedup : std::nullopt) << '\n';
          }
          out << "\n\n";
        }
      }
    }
    const size_t rows = report.models.size(), columns = parallel_strategies.size();
    const int largest = report.predicted_devices.empty() ? 2 : report.predicted_devices.back();
    gp << "set terminal pngcairo noenhanced size " << 120 + 380 * columns << "," << 110 + 300 * rows << " font ',10'\n"
       << "set multiplot layout " << rows << "," << columns
       << " title \"Speedup over single-device training: lines predicted by the cost model, filled circles "
          "measured\\n"
       << title_of(report) << "\"\n"
       << "set logscale x 2\nset xrange [0.9:" << largest * 1.1 << "]\nset xtics (1";
    for (int n : report.predicted_devices) gp << ", " << n;
    gp << ")\nset yrange [0:" << top * 1.15 << "]\nset grid\nset xlabel 'devices'\nset ylabel 'speedup'\n";
    size_t block = 0;
    for (size_t m = 0; m < rows; ++m) {
      for (size_t c = 0; c < columns; ++c) {
        gp << "set title '" << report.models[m] << ": " << parallel::to_string(parallel_strategies[c]) << "'\n";
        if (m == 0 && c == 0) gp << "set key top left font ',9'\n";
        else gp << "unset key\n";
        gp << "plot x title 'ideal' lc rgb 'gray' dt 3, 1 title 'single' lc rgb 'gray' dt 2";
        for (size_t l = 0; l < report.links.size(); ++l, ++block) {
          const std::string color = link_color(l);
          gp << ", '" << data << "' index " << block << " using 1:2 with linespoints pt 6 lw 2 lc rgb '" << color
             << "' title '" << report.links[l] << "', '' index " << block
             << " using 1:3 with points pt 7 ps 1.6 lc rgb '" << color << "' notitle";
        }
        gp << '\n';
      }
    }
    gp << "unset multiplot\n";
  });
}

}  // namespace duet::apps
