#include "regime_report.h"

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>

#include "result_files.h"

namespace duet::apps {
namespace {

// The metadata, in the order both files list them.
std::vector<std::pair<std::string, nlohmann::json>> metadata(const RegimeReport& r) {
  std::vector<std::string> strategies;
  for (parallel::StrategyKind s : r.strategies) strategies.push_back(parallel::to_string(s));
  return {{"tool", "duet regime"},
          {"duet_commit", r.build.built_commit},
          {"checkout_commit", r.build.checkout_commit},
          {"date_utc", r.started_utc},
          {"seconds", r.seconds},
          {"cpu_model", r.machine.cpu_model},
          {"hardware_threads", r.machine.hardware_threads},
          {"process_cores", r.machine.process_cores},
          {"devices", r.device_kind},
          {"measured_devices", r.measured_devices},
          {"predicted_devices", r.predicted_devices},
          {"models", r.models},
          {"links", r.links},
          {"strategies", strategies},
          {"batch_size", r.batch_size},
          {"steps", r.steps},
          {"warmup", r.warmup},
          {"seed", r.seed},
          {"optimizer", r.optimizer},
          {"lr", r.lr},
          {"check", r.check}};
}

std::string kind(const parallel::RegimePoint& p) { return p.measured ? "measured" : "predicted"; }

nlohmann::json winners_json(const RegimeReport& r, bool measured, int devices) {
  nlohmann::json cells = nlohmann::json::array();
  for (const parallel::RegimeCell& c : parallel::regime_winners(r.points, measured, devices)) {
    cells.push_back({{"model", c.model},
                     {"link", c.link},
                     {"winner", parallel::to_string(c.winner)},
                     {"runner_up", c.runner_up ? nlohmann::json(parallel::to_string(*c.runner_up)) : nlohmann::json()},
                     {"margin", c.margin},
                     {"label", parallel::cell_label(c)}});
  }
  return cells;
}

}  // namespace

void write_regime_csv(const RegimeReport& report, const std::string& path) {
  write_checked(path, "regime.csv", [&](std::ostream& out) {
    out << std::setprecision(10);
    for (const auto& [key, value] : metadata(report)) {
      // Lists as "a;b;c", so that a comment line stays one line of plain words.
      std::string text;
      if (value.is_array()) {
        for (const auto& item : value)
          text += (text.empty() ? "" : ";") + (item.is_string() ? item.get<std::string>() : item.dump());
      } else {
        text = value.is_string() ? value.get<std::string>() : value.dump();
      }
      out << "# " << key << ": " << text << '\n';
    }
    out << "model,link,strategy,devices,kind,batch_size,ms_per_step,images_per_second,speedup,max_check_ulps,"
           "predicted_ms,compute_slowdown\n";
    for (const parallel::RegimePoint& p : report.points) {
      out << p.model << ',' << p.link << ',' << p.strategy << ',' << p.devices << ',' << kind(p) << ',' << p.batch_size
          << ',' << p.ms_per_step << ',' << p.images_per_second;
      for (const auto& value : {p.speedup, p.max_check_ulps, p.predicted_ms, p.compute_slowdown}) {
        out << ',';
        if (value) out << *value;
      }
      out << '\n';
    }
  });
}

void write_regime_json(const RegimeReport& report, const std::string& path) {
  nlohmann::json meta = nlohmann::json::object();
  for (const auto& [key, value] : metadata(report)) meta[key] = value;
  nlohmann::json points = nlohmann::json::array();
  for (const parallel::RegimePoint& p : report.points) {
    points.push_back({{"model", p.model},
                      {"link", p.link},
                      {"strategy", parallel::to_string(p.strategy)},
                      {"devices", p.devices},
                      {"kind", kind(p)},
                      {"batch_size", p.batch_size},
                      {"ms_per_step", p.ms_per_step},
                      {"images_per_second", p.images_per_second},
                      {"speedup", optional_json(p.speedup)},
                      {"max_check_ulps", optional_json(p.max_check_ulps)},
                      {"predicted_ms", optional_json(p.predicted_ms)},
                      {"compute_slowdown", optional_json(p.compute_slowdown)}});
  }
  nlohmann::json predicted_winners = nlohmann::json::object();
  for (int n : report.predicted_devices) predicted_winners[std::to_string(n)] = winners_json(report, false, n);
  nlohmann::json calibration = nlohmann::json::object();
  for (const auto& [link, fits] : report.calibration) {
    nlohmann::json list = nlohmann::json::array();
    for (const parallel::LinkFit& fit : fits)
      list.push_back({{"what", fit.what}, {"alpha_us", fit.alpha_us}, {"beta_gbps", fit.beta_gbps}});
    calibration[link] = list;
  }
  const nlohmann::json doc = {
      {"metadata", meta},
      {"points", points},
      {"calibration", calibration},
      {"winners",
       {{"measured", winners_json(report, true, report.measured_devices)}, {"predicted", predicted_winners}}}};
  write_checked(path, "regime.json", [&](std::ostream& out) { out << doc.dump(2) << '\n'; });
}

void print_regime_map(const RegimeReport& report, std::FILE* out) {
  const std::vector<parallel::RegimeCell> cells =
      parallel::regime_winners(report.points, true, report.measured_devices);
  std::fprintf(
      out, "duet regime: the fastest strategy (single, or %d devices) and its margin over the runner-up, measured\n",
      report.measured_devices);
  std::fprintf(out, "%-12s", "link");
  for (const std::string& model : report.models) std::fprintf(out, " %-22s", model.c_str());
  std::fprintf(out, "\n");
  for (const std::string& link : report.links) {
    std::fprintf(out, "%-12s", link.c_str());
    for (const std::string& model : report.models) {
      auto cell = std::find_if(cells.begin(), cells.end(),
                               [&](const parallel::RegimeCell& c) { return c.model == model && c.link == link; });
      std::fprintf(out, " %-22s", cell == cells.end() ? "-" : parallel::cell_label(*cell).c_str());
    }
    std::fprintf(out, "\n");
  }
}

}  // namespace duet::apps
