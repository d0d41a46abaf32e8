// What `duet regime` writes: regime.csv and regime.json, one row per (model, link, strategy,
// devices, measured or predicted), under the metadata of the sweep (machine, date, commit).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "build_info.h"
#include "duet/parallel/lab/link_calibration.h"
#include "duet/parallel/lab/regime_map.h"

namespace duet::apps {

struct RegimeReport {
  std::vector<std::string> models;
  std::vector<std::string> links;
  std::vector<parallel::StrategyKind> strategies;
  int measured_devices = 2;
  std::vector<int> predicted_devices;
  int64_t batch_size = 0;
  int64_t steps = 0;
  int64_t warmup = 0;
  uint64_t seed = 0;
  std::string optimizer;  // "sgd", "adam"
  double lr = 0;
  bool check = true;
  std::string device_kind;  // "logical CPU devices, 1 core(s) each, pinned"
  BuildInfo build;
  MachineInfo machine;
  std::string started_utc;
  double seconds = 0;  // the whole sweep's wall clock
  std::vector<parallel::RegimePoint> points;
  // Per link, in the order run: what its calibration measured (alpha and beta of each fit).
  std::vector<std::pair<std::string, std::vector<parallel::LinkFit>>> calibration;
};

// Both throw duet::Error naming the file when it cannot be written. The CSV's metadata are
// comment lines ("# key: value") above its header line.
void write_regime_csv(const RegimeReport& report, const std::string& path);
void write_regime_json(const RegimeReport& report, const std::string& path);

// The measured winners' table, for the terminal: a row per link, a column per model.
void print_regime_map(const RegimeReport& report, std::FILE* out);

}  // namespace duet::apps
