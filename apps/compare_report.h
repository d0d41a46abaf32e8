// What `duet compare` prints and writes: the results table, the cost model's predictions,
// results.json and results.csv.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "duet/parallel/experiment.h"

namespace duet::apps {

struct PredictionRow {
  std::string strategy;
  int devices = 1;
  std::optional<double> measured_ms;  // per step here, when this run was measured
  parallel::Prediction nvlink, pcie;
};

struct CompareReport {
  parallel::ExperimentConfig config;
  std::string device_kind;  // "logical CPU devices on 2 hardware threads", "CUDA"
  std::vector<parallel::RunMeasurement> runs;
  std::vector<PredictionRow> predictions;  // empty without --predict
};

// A correct strategy lands within this many float ulps of single-device training's step.
inline constexpr double kCheckUlps = 8;

void print_results(const CompareReport& report, std::FILE* out);
void print_predictions(const CompareReport& report, std::FILE* out);
// Both throw duet::Error naming the file when it cannot be written.
void write_results_json(const CompareReport& report, const std::string& path);
void write_results_csv(const CompareReport& report, const std::string& path);

}  // namespace duet::apps
