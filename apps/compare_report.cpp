#include "compare_report.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "duet/core/error.h"
#include "duet/nn/layers.h"
#include "duet/nn/models/models.h"
#include "duet/parallel/lab/repeats.h"
#include "duet/parallel/lab/step_check.h"
#include "result_files.h"

namespace duet::apps {
namespace {

using parallel::kNumPhases;
using parallel::Phase;

// Short column heads for the phases, in Phase order.
constexpr const char* kPhaseHeads[kNumPhases] = {"scatter", "bcast", "bufsync", "fwd", "gather",
                                                 "loss",    "bwd",   "allred",  "step"};

// Per device, "a/b/c" in MiB with `decimals`; `bytes` picks the figure.
template <class Bytes> std::string per_device_cell(const parallel::RunMeasurement& run, int decimals, Bytes bytes) {
  std::string cell;
  for (const auto& m : run.memory) {
    char mib[32];
    std::snprintf(mib, sizeof mib, "%.*f", decimals, static_cast<double>(bytes(m)) / (1 << 20));
    cell += (cell.empty() ? "" : "/") + std::string(mib);
  }
  return cell;
}

std::string memory_cell(const parallel::RunMeasurement& run) {
  return per_device_cell(run, 1, [](const parallel::DeviceMemory& m) { return m.peak_bytes; });
}

// Optimizer state is small beside the peak: two decimals, so that zero1's 1/N shows.
std::string optimizer_state_cell(const parallel::RunMeasurement& run) {
  return per_device_cell(run, 2, [](const parallel::DeviceMemory& m) { return m.optimizer_state_bytes; });
}

std::string diff_cell(const std::optional<double>& diff) {
  if (!diff) return "n/a";
  char text[32];
  std::snprintf(text, sizeof text, "%.2e", *diff);
  return text;
}

std::string ulps_cell(const std::optional<double>& ulps) {
  if (!ulps) return "off";
  char text[32];
  std::snprintf(text, sizeof text, *ulps < 1e4 ? "%.1f" : "%.1e", *ulps);
  return text;
}

// Per timed step and rank.
double per_step(double total_ms, const parallel::CommOverlap& overlap) {
  return overlap.samples > 0 ? total_ms / static_cast<double>(overlap.samples) : 0;
}

// Whether a module tree normalises with batch statistics: plain BatchNorm2d anywhere in it.
bool has_batch_norm(const nn::Module& module) {
  if (dynamic_cast<const nn::BatchNorm2dImpl*>(&module)) return true;
  for (const auto& [name, child] : module.named_children()) {
    if (has_batch_norm(*child)) return true;
  }
  return false;
}

// The check's second half: every ddp replica against rank 0's after every step.
void print_replica_check(const CompareReport& report, std::FILE* out) {
  std::string drifted;
  bool checked = false;
  for (const auto& run : report.runs) {
    if (!run.replicas_checked) continue;
    checked = true;
    if (run.replica_divergence) {
      drifted += (drifted.empty() ? "" : "; ") + parallel::to_string(run.strategy) + " on " +
                 std::to_string(run.devices) + ": " + *run.replica_divergence;
    }
  }
  if (!checked) return;
  if (drifted.empty()) {
    std::fprintf(out, "per-step check: every ddp replica equal to rank 0's after every checked step (%s)\n",
                 report.config.comm ? "a checksum per rank, compared on rank 0" : "bit for bit");
  } else {
    std::fprintf(out, "per-step check: a ddp replica drifted from rank 0's: %s\n", drifted.c_str());
  }
}

void print_check(const CompareReport& report, std::FILE* out) {
  using parallel::kCheckUlps;
  std::string failed, by_order;
  bool checked = false;
  for (const auto& run : report.runs) {
    if (!run.max_check_ulps) continue;
    checked = true;
    std::string who = parallel::to_string(run.strategy) + " on " + std::to_string(run.devices) + " (" +
                      ulps_cell(run.max_check_ulps) + " ulps";
    if (run.check_order_ulps) who += ", order of additions " + ulps_cell(run.check_order_ulps);
    who += ")";
    if (!parallel::check_passed(run)) {
      failed += (failed.empty() ? "" : ", ") + who;
    } else if (*run.max_check_ulps > kCheckUlps) {
      by_order += (by_order.empty() ? "" : ", ") + who;
    }
  }
  if (!checked) return;
  const long long checked_steps = static_cast<long long>(report.config.warmup + report.config.steps);
  std::fprintf(out,
               "per-step check: on each run's first %lld steps; its timed steps come after them, unchecked, so "
               "that the check's own single-device step leaves their caches alone\n",
               checked_steps);
  print_replica_check(report, out);
  // What separates ddp with SyncBatchNorm from single-device training, named under either verdict.
  const bool sync_batch_norm =
      report.config.ddp.sync_batchnorm && has_batch_norm(*nn::models::make(report.config.model));
  const char* kSyncCause =
      "with --sync-bn ddp computes the global batch's statistics with BatchNorm2d's own arithmetic "
      "(kernels/batch_norm_math.h), so what separates its step from single-device training's is only the order "
      "of additions: the statistics' double sums split by rank, and the gradients added over the ranks";
  const std::string order_clause = ", or within " + std::to_string(static_cast<int>(parallel::kOrderFactor)) +
                                   "x the order of additions' own effect";
  if (failed.empty()) {
    std::fprintf(
        out,
        "per-step check: every strategy's every checked step within %.0f ulps of single-device training's step "
        "from the same parameters%s\n",
        kCheckUlps, by_order.empty() ? "" : order_clause.c_str());
    if (!by_order.empty()) {
      std::fprintf(out,
                   "  beyond %.0f ulps: %s; the order of additions: how far single-device training's own step "
                   "moves on this CPU when the batch's rows are reversed (docs/parallel-strategies.md, the "
                   "equivalence metric)\n",
                   kCheckUlps, by_order.c_str());
    }
    if (sync_batch_norm) std::fprintf(out, "  %s has BatchNorm: %s\n", report.config.model.c_str(), kSyncCause);
  } else {
    std::fprintf(out,
                 "per-step check: NOT single-device training's step (more than %.0f ulps, and more than %.0fx the "
                 "order of additions' own effect): %s\n",
                 kCheckUlps, parallel::kOrderFactor, failed.c_str());
    if (!has_batch_norm(*nn::models::make(report.config.model))) return;
    if (sync_batch_norm) {
      std::fprintf(out,
                   "  expected for dp only: %s has BatchNorm, and dp normalises each shard with the shard's own "
                   "statistics; %s, so ddp failing here is a bug (docs/parallel-strategies.md, "
                   "the equivalence metric)\n",
                   report.config.model.c_str(), kSyncCause);
    } else {
      std::fprintf(out,
                   "  expected: %s has BatchNorm, and each device normalises its shard with the shard's own "
                   "statistics, so dp (and ddp without --sync-bn) do not take single-device training's step "
                   "(docs/parallel-strategies.md, BatchNorm)\n",
                   report.config.model.c_str());
    }
  }
}

// ddp on 2 devices or more: something was all-reduced.
bool has_overlap(const parallel::RunMeasurement& run) { return run.devices > 1 && run.overlap.bytes > 0; }

void print_overlap(const CompareReport& report, std::FILE* out) {
  for (size_t i = 0; i < report.runs.size(); ++i) {
    const auto& run = report.runs[i];
    const parallel::CommOverlap& o = run.overlap;
    if (!has_overlap(run)) continue;
    char predicted[48] = "";
    if (i < report.simulated.size() && report.simulated[i]) {
      std::snprintf(predicted, sizeof predicted, " (predicted %.0f%%)", 100 * report.simulated[i]->hidden_share());
    }
    std::fprintf(out,
                 "%s on %d: %.0f%% of the all-reduced bytes done before backward's last gradient%s; all-reduce "
                 "%.2f ms per step and rank, %.2f ms of it exposed after backward\n",
                 parallel::to_string(run.strategy).c_str(), run.devices, 100 * o.hidden_share(), predicted,
                 per_step(o.busy_ms, o), per_step(o.exposed_ms, o));
  }
}

}  // namespace

void print_results(const CompareReport& report, std::FILE* out) {
  const auto& c = report.config;
  std::fprintf(out,
               "duet compare: %s, global batch %lld, %lld timed steps after %lld warm-up, seed %llu, on %s, link %s\n",
               c.model.c_str(), static_cast<long long>(c.batch_size), static_cast<long long>(c.steps),
               static_cast<long long>(c.warmup), static_cast<unsigned long long>(c.seed), report.device_kind.c_str(),
               c.link.describe().c_str());
  if (const parallel::GradCompression format = c.ddp.grad_compression; format != parallel::GradCompression::none)
    std::fprintf(out,
                 "gradient compression: ddp all-reduces its gradients as %s, half the bytes; the per-step check "
                 "applies the same roundings to single-device training's gradient\n",
                 parallel::name(format));
  if (report.repeats > 1)
    std::fprintf(out,
                 "repeats: the sweep ran %d times, one after another; each row is the run's repeat of median step "
                 "time, with the check's verdict over all of them\n",
                 report.repeats);
  for (const std::string& note : report.notes) std::fprintf(out, "note: %s\n", note.c_str());
  std::fprintf(out, "%-15s %3s %8s %8s |", "strategy", "dev", "img/s", "ms/step");
  for (const char* head : kPhaseHeads) std::fprintf(out, " %7s", head);
  std::fprintf(out, " | %9s  %-17s %-17s %10s %10s %10s %10s\n", "MB/step", "peak MiB/device", "optim MiB/device",
               "final loss", "check ulps", "diff@1", "diff@end");
  for (const auto& run : report.runs) {
    std::fprintf(out, "%-15s %3d %8.0f %8.2f |", parallel::to_string(run.strategy).c_str(), run.devices,
                 run.images_per_second, run.ms_per_step);
    for (double ms : run.phase_ms) std::fprintf(out, " %7.2f", ms);
    std::fprintf(out, " | %9.3f  %-17s %-17s %10.5f %10s %10s %10s\n", run.bytes_per_step / 1e6,
                 memory_cell(run).c_str(), optimizer_state_cell(run).c_str(), run.final_loss,
                 ulps_cell(run.max_check_ulps).c_str(), diff_cell(run.first_step_param_diff).c_str(),
                 diff_cell(run.max_param_diff).c_str());
  }
  std::fprintf(out,
               "phases: mean ms per step, the slowest device's for ddp; bwd includes dp's gradient reduce; "
               "optim: the optimizer state each device holds (zero1 shards it); "
               "check ulps: the worst step's distance from single-device training's step from the same "
               "parameters, in float ulps; diff@1, diff@end: largest |parameter - single's| after the first and "
               "the last step of separate runs (training amplifies roundings: information, not a test)\n");
  print_check(report, out);
  print_overlap(report, out);
}

void print_model_check(const CompareReport& report, std::FILE* out) {
  if (report.simulated.empty()) return;
  std::fprintf(out, "\nlinks calibrated before the sweep (alpha + bytes / beta, fitted to a sweep of 4 B to 4 MiB):\n");
  for (const parallel::LinkFit& fit : report.calibration) {
    std::fprintf(out, "  %-52s alpha %8.1f us  beta %7.2f GB/s\n", fit.what.c_str(), fit.alpha_us, fit.beta_gbps);
  }
  for (const auto& [devices, ms] : report.replica_threads_ms) {
    std::fprintf(out, "  %-52s %8.1f us per step\n",
                 ("replica threads, " + std::to_string(devices) + " devices").c_str(), ms * 1e3);
  }
  for (const parallel::StepOverhead& o : report.step_overhead) {
    std::fprintf(out, "  %-52s %8.1f us per step (%.2f ms measured, %.2f simulated)\n",
                 ("step overhead, " + parallel::to_string(o.strategy) + " on " + std::to_string(o.devices)).c_str(),
                 o.ms() * 1e3, o.measured_ms, o.simulated_ms);
  }
  const parallel::RunMeasurement* single = nullptr;
  const parallel::SimulatedStep* single_predicted = nullptr;
  for (size_t i = 0; i < report.runs.size(); ++i) {
    if (report.runs[i].strategy == parallel::StrategyKind::single && report.simulated[i]) {
      single = &report.runs[i];
      single_predicted = &*report.simulated[i];
    }
  }
  std::fprintf(out,
               "cost model (event simulation from the single-device run's compute and the links above) beside "
               "the measurement, %s scaling:\n",
               report.weak_scaling ? "weak" : "strong");
  std::fprintf(out, "%-15s %3s %6s | %11s %12s %7s %6s | %8s %8s | %8s %8s | %8s %8s | %7s | %7s\n", "strategy", "dev",
               "batch", "measured ms", "predicted ms", "error", "spread", "speedup", "(pred)", "effic.", "(pred)",
               "hidden", "(pred)", "in run", "compute");
  for (size_t i = 0; i < report.runs.size(); ++i) {
    if (!report.simulated[i]) continue;
    const parallel::RunMeasurement& run = report.runs[i];
    const parallel::SimulatedStep& sim = *report.simulated[i];
    const double error = (sim.step_ms - run.ms_per_step) / run.ms_per_step;
    double speedup = 0, predicted_speedup = 0;
    if (single) {
      speedup = run.images_per_second / single->images_per_second;
      predicted_speedup = (static_cast<double>(run.batch_size) / sim.step_ms) /
                          (static_cast<double>(single->batch_size) / single_predicted->step_ms);
    }
    char hidden[16] = "-", predicted_hidden[16] = "-", spread[16] = "-";
    if (const std::optional<double> s = parallel::repeat_spread(run))
      std::snprintf(spread, sizeof spread, "%.0f%%", 100 * *s);
    if (has_overlap(run)) {
      std::snprintf(hidden, sizeof hidden, "%.0f%%", 100 * run.overlap.hidden_share());
      std::snprintf(predicted_hidden, sizeof predicted_hidden, "%.0f%%", 100 * sim.hidden_share());
    }
    std::fprintf(
        out,
        "%-15s %3d %6lld | %11.2f %12.2f %+6.1f%% %6s | %7.2fx %7.2fx | %7.0f%% %7.0f%% | %8s %8s | %6.2fx | %6.2fx\n",
        parallel::to_string(run.strategy).c_str(), run.devices, static_cast<long long>(run.batch_size), run.ms_per_step,
        sim.step_ms, 100 * error, spread, speedup, predicted_speedup, 100 * speedup / run.devices,
        100 * predicted_speedup / run.devices, hidden, predicted_hidden,
        single ? parallel::forward_slowdown(run, *single) : 0, report.compute_slowdown[i].value_or(1));
  }
  std::fprintf(out,
               "compute: the run's devices timing the model's forward and backward at its shard size at once just "
               "before it, per row, over one device alone at single's batch just before single's run (the prediction "
               "scales single's compute by it); in run: the same ratio for the run's own forward, the slowest "
               "device's (dp's with its threads' start), which the prediction does not use; spread: with --repeats, "
               "(slowest - fastest repeat) / median, of the "
               "run's ms per step (an error within it says nothing either way); speedup: img/s "
               "over single-device training's (predicted: over its predicted step); effic.: speedup / devices; "
               "hidden: the share of ddp's all-reduced bytes whose collective finished before the rank's backward "
               "computed its last gradient, the waits for the last rank to launch taken out\n");
}

void print_predictions(const CompareReport& report, std::FILE* out) {
  if (report.predictions.empty()) return;
  const parallel::Links nv = parallel::nvlink_links(), pc = parallel::pcie_links();
  auto describe = [](const parallel::Links& l) {
    char text[96];
    std::snprintf(text, sizeof text, "%s: %.1f us + bytes / %.0f GB/s per ring step", l.name.c_str(),
                  l.link.alpha_ms * 1e3, 1 / (l.link.ms_per_byte * 1e6));
    return std::string(text);
  };
  std::fprintf(out,
               "\npredicted on GPUs (event simulation; compute: this run's single-device phases, measured here; "
               "links: presets, assumed): %s; %s. dp rows model PyTorch's DataParallel (NCCL broadcast and "
               "reduce through device 0), ddp rows NCCL's ring all-reduce; speedup: img/s over single's; closed: the "
               "closed-form model (cost_model.h) as a cross-check, strong scaling only\n",
               describe(nv).c_str(), describe(pc).c_str());
  std::fprintf(out, "%-15s %3s %11s | %10s %9s %8s %10s | %10s %9s %8s %10s\n", "strategy", "dev", "measured ms",
               "NVLink ms", "comm ms", "speedup", "closed ms", "PCIe ms", "comm ms", "speedup", "closed ms");
  // Speedup: throughput over single-device training's, so that it reads alike for weak scaling.
  double single_nvlink = 0, single_pcie = 0;
  for (const auto& row : report.predictions) {
    if (row.strategy != parallel::StrategyKind::single) continue;
    single_nvlink = static_cast<double>(row.batch_size) / row.nvlink.step_ms;
    single_pcie = static_cast<double>(row.batch_size) / row.pcie.step_ms;
  }
  for (const auto& row : report.predictions) {
    char measured[32] = "-";
    if (row.measured_ms) std::snprintf(measured, sizeof measured, "%.2f", *row.measured_ms);
    auto cells = [&](const parallel::SimulatedStep& p, double single,
                     const std::optional<parallel::Prediction>& closed) {
      const double throughput = static_cast<double>(row.batch_size) / p.step_ms;
      char closed_ms[32] = "-";
      if (closed) std::snprintf(closed_ms, sizeof closed_ms, "%.3f", closed->step_ms());
      std::fprintf(out, " %10.3f %9.3f %7.2fx %10s", p.step_ms, p.comm_ms, single > 0 ? throughput / single : 0.0,
                   closed_ms);
    };
    std::fprintf(out, "%-15s %3d %11s |", parallel::to_string(row.strategy).c_str(), row.devices, measured);
    cells(row.nvlink, single_nvlink, row.closed_nvlink);
    std::fprintf(out, " |");
    cells(row.pcie, single_pcie, row.closed_pcie);
    std::fprintf(out, "\n");
  }
}

namespace {
std::optional<double> predicted_ms(const CompareReport& report, size_t run) {
  if (run < report.simulated.size() && report.simulated[run]) return report.simulated[run]->step_ms;
  return std::nullopt;
}
std::optional<double> compute_slowdown(const CompareReport& report, size_t run) {
  return run < report.compute_slowdown.size() ? report.compute_slowdown[run] : std::nullopt;
}
}  // namespace

void write_results_json(const CompareReport& report, const std::string& path) {
  const auto single = std::find_if(report.runs.begin(), report.runs.end(), [](const parallel::RunMeasurement& r) {
    return r.strategy == parallel::StrategyKind::single;
  });
  nlohmann::json results = nlohmann::json::array();
  for (size_t i = 0; i < report.runs.size(); ++i) {
    const auto& run = report.runs[i];
    nlohmann::json phases, memory = nlohmann::json::array();
    for (size_t i = 0; i < kNumPhases; ++i) phases[parallel::name(static_cast<Phase>(i))] = run.phase_ms[i];
    for (const auto& m : run.memory) {
      memory.push_back(
          {{"device", m.device}, {"peak_bytes", m.peak_bytes}, {"optimizer_state_bytes", m.optimizer_state_bytes}});
    }
    results.push_back(
        {{"strategy", parallel::to_string(run.strategy)},
         {"devices", run.devices},
         {"images_per_second", run.images_per_second},
         {"ms_per_step", run.ms_per_step},
         {"step_ms", run.step_ms},
         {"repeat_ms_per_step", run.repeat_ms_per_step},
         {"phases_ms", phases},
         {"bytes_per_step", run.bytes_per_step},
         {"peak_memory", memory},
         {"final_loss", run.final_loss},
         {"max_check_ulps", optional_json(run.max_check_ulps)},
         {"check_order_ulps", optional_json(run.check_order_ulps)},
         {"check_passed", run.max_check_ulps ? nlohmann::json(parallel::check_passed(run)) : nlohmann::json()},
         {"first_step_param_diff", optional_json(run.first_step_param_diff)},
         {"max_param_diff", optional_json(run.max_param_diff)},
         {"allreduce_ms_per_step", per_step(run.overlap.busy_ms, run.overlap)},
         {"allreduce_exposed_ms_per_step", per_step(run.overlap.exposed_ms, run.overlap)},
         {"allreduce_hidden_share", has_overlap(run) ? nlohmann::json(run.overlap.hidden_share()) : nlohmann::json()},
         {"replicas_equal", run.replicas_checked ? nlohmann::json(!run.replica_divergence) : nlohmann::json()},
         {"replica_divergence", run.replica_divergence ? nlohmann::json(*run.replica_divergence) : nlohmann::json()},
         {"batch_size", run.batch_size},
         {"compute_slowdown", optional_json(compute_slowdown(report, i))},
         {"forward_slowdown",
          single != report.runs.end() ? nlohmann::json(parallel::forward_slowdown(run, *single)) : nlohmann::json()},
         {"predicted_ms", optional_json(predicted_ms(report, i))},
         {"predicted_hidden_share", i < report.simulated.size() && report.simulated[i] && has_overlap(run)
                                        ? nlohmann::json(report.simulated[i]->hidden_share())
                                        : nlohmann::json()}});
  }
  nlohmann::json predictions = nlohmann::json::array();
  for (const auto& row : report.predictions) {
    auto one = [](const parallel::SimulatedStep& p, const std::optional<parallel::Prediction>& closed) {
      return nlohmann::json{{"step_ms", p.step_ms},
                            {"comm_ms", p.comm_ms},
                            {"closed_form_step_ms", closed ? nlohmann::json(closed->step_ms()) : nlohmann::json()}};
    };
    predictions.push_back({{"strategy", parallel::to_string(row.strategy)},
                           {"devices", row.devices},
                           {"batch_size", row.batch_size},
                           {"measured_ms", optional_json(row.measured_ms)},
                           {"nvlink", one(row.nvlink, row.closed_nvlink)},
                           {"pcie", one(row.pcie, row.closed_pcie)}});
  }
  nlohmann::json calibration = nlohmann::json::array();
  for (const parallel::LinkFit& fit : report.calibration) {
    nlohmann::json samples = nlohmann::json::array();
    for (const parallel::TimedSize& x : fit.samples) samples.push_back({{"bytes", x.bytes}, {"ms", x.ms}});
    calibration.push_back(
        {{"link", fit.what}, {"alpha_us", fit.alpha_us}, {"beta_gbps", fit.beta_gbps}, {"samples", samples}});
  }
  nlohmann::json step_overhead = nlohmann::json::array();
  for (const parallel::StepOverhead& o : report.step_overhead) {
    step_overhead.push_back({{"strategy", parallel::to_string(o.strategy)},
                             {"devices", o.devices},
                             {"measured_ms", o.measured_ms},
                             {"simulated_ms", o.simulated_ms},
                             {"overhead_ms", o.ms()}});
  }
  const auto& c = report.config;
  nlohmann::json doc = {{"model", c.model},
                        {"batch_size", c.batch_size},
                        {"steps", c.steps},
                        {"warmup", c.warmup},
                        {"repeats", report.repeats},
                        {"seed", c.seed},
                        {"devices", report.device_kind},
                        {"link",
                         {{"name", c.link.name},
                          {"emulated", c.link.emulated()},
                          {"alpha_us", c.link.alpha_us},
                          {"beta_gbps", c.link.emulated() ? nlohmann::json(c.link.beta_gbps) : nlohmann::json()},
                          {"through_host", c.link.through_host}}},
                        {"results", results},
                        {"predictions", predictions},
                        {"scaling", report.weak_scaling ? "weak" : "strong"},
                        {"notes", report.notes},
                        {"calibration", calibration},
                        {"replica_threads_ms", report.replica_threads_ms},
                        {"step_overhead", step_overhead}};
  write_checked(path, "results.json", [&](std::ostream& out) { out << doc.dump(2) << '\n'; });
}

void write_results_csv(const CompareReport& report, const std::string& path) {
  write_checked(path, "results.csv", [&](std::ostream& out) {
    out << "strategy,devices,images_per_second,ms_per_step";
    for (size_t i = 0; i < kNumPhases; ++i) out << ',' << parallel::name(static_cast<Phase>(i)) << "_ms";
    out << ",bytes_per_step,peak_bytes_per_device,final_loss,max_check_ulps,first_step_param_diff,max_param_diff,"
           "allreduce_ms_per_step,allreduce_exposed_ms_per_step,allreduce_hidden_share,batch_size,predicted_ms,"
           "compute_slowdown,optimizer_state_bytes_per_device\n";
    for (size_t i = 0; i < report.runs.size(); ++i) {
      const auto& run = report.runs[i];
      out << run.strategy << ',' << run.devices << ',' << run.images_per_second << ',' << run.ms_per_step;
      for (double ms : run.phase_ms) out << ',' << ms;
      out << ',' << run.bytes_per_step << ',';
      for (size_t i = 0; i < run.memory.size(); ++i) out << (i ? ";" : "") << run.memory[i].peak_bytes;
      out << ',' << run.final_loss;
      for (const auto& value : {run.max_check_ulps, run.first_step_param_diff, run.max_param_diff}) {
        out << ',';
        if (value) out << *value;
      }
      out << ',' << per_step(run.overlap.busy_ms, run.overlap) << ',' << per_step(run.overlap.exposed_ms, run.overlap)
          << ',';
      if (has_overlap(run)) out << run.overlap.hidden_share();
      out << ',' << run.batch_size << ',';
      if (auto predicted = predicted_ms(report, i)) out << *predicted;
      out << ',';
      if (auto slowdown = compute_slowdown(report, i)) out << *slowdown;
      out << ',';
      for (size_t i = 0; i < run.memory.size(); ++i) out << (i ? ";" : "") << run.memory[i].optimizer_state_bytes;
      out << '\n';
    }
  });
}

}  // namespace duet::apps
