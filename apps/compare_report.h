// What `duet compare` prints and writes: the results table, the cost model's prediction of
// every measured run beside it, the GPU predictions, results.json and results.csv.
#pragma once

#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "duet/parallel/lab/experiment.h"
#include "duet/parallel/lab/link_calibration.h"
#include "duet/parallel/lab/step_overhead.h"
#include "duet/parallel/lab/step_prediction.h"
#include "duet/parallel/lab/step_simulation.h"

namespace duet::apps {

// --predict: one strategy on `devices` GPUs, simulated on each preset, with the closed-form
// alpha-beta model (cost_model.h) beside it as a cross-check.
struct PredictionRow {
  parallel::StrategyKind strategy = parallel::StrategyKind::single;
  int devices = 1;
  int64_t batch_size = 0;             // global
  std::optional<double> measured_ms;  // per step here, when this run was measured
  parallel::SimulatedStep nvlink, pcie;
  std::optional<parallel::Prediction> closed_nvlink, closed_pcie;  // strong scaling only
};

struct CompareReport {
  parallel::ExperimentConfig config;
  std::string device_kind;         // "logical CPU devices on 2 hardware threads", "CUDA"
  Shape example_shape;             // one training example's, e.g. {1, 28, 28}
  bool weak_scaling = false;       // --batch-per-device: the global batch grows with the devices
  int repeats = 1;                 // of the sweep; each run is its median repeat (repeats.h)
  std::vector<std::string> notes;  // where the devices ran, the device counts left out
  std::vector<parallel::RunMeasurement> runs;
  std::vector<parallel::LinkFit> calibration;         // the links measured before the sweep
  std::map<int, double> replica_threads_ms;           // the same: a step's thread start and join, per device count
  std::vector<parallel::StepOverhead> step_overhead;  // measured before the sweep, per strategy and device count
  // Per run (same order): its devices' compute time per row at once, just before it, over one
  // device's alone at single's batch just before the single-device run (ComputeLoad); 1 for
  // single; unset without the
  // calibration (no single-device run, or nothing parallel to predict).
  std::vector<std::optional<double>> compute_slowdown;
  // Per run (same order): the event simulation's step from the calibrated links; unset when
  // there was no single-device run to start from.
  std::vector<std::optional<parallel::SimulatedStep>> simulated;
  std::vector<PredictionRow> predictions;  // empty without --predict
};

void print_results(const CompareReport& report, std::FILE* out);
// The calibration, then every measured run's predicted step beside its measured one, with the
// error, speedup and scaling efficiency of each.
void print_model_check(const CompareReport& report, std::FILE* out);
void print_predictions(const CompareReport& report, std::FILE* out);
// Both throw duet::Error naming the file when it cannot be written.
void write_results_json(const CompareReport& report, const std::string& path);
void write_results_csv(const CompareReport& report, const std::string& path);

}  // namespace duet::apps
