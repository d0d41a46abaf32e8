#include "compare_command.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include "cli_common.h"
#include "compare_prediction.h"
#include "compare_report.h"
#include "duet/core/placement.h"
#include "duet/data/fashion_mnist.h"
#include "duet/kernels/kernels.h"
#include "duet/nn/models/models.h"
#include "duet/parallel/comm/mpi_communicator.h"
#include "duet/parallel/lab/repeats.h"
#include "duet/parallel/lab/scaling_sweep.h"
#include "file_collisions.h"
#include "grad_compression_flag.h"
#include "output_paths.h"
#include "plot.h"
#include "process_cores.h"
#include "rank_agreement.h"
#include "strategy_flags.h"
#include "trace.h"

namespace duet::apps {
namespace {

// --bucket-mb's largest value, 1 TiB: far beyond any model, and its bytes fit in an int64.
constexpr double kMaxBucketMb = 1024.0 * 1024.0;

struct CompareArgs {
  std::string model = "lenet-relu";
  std::vector<int> devices = {2};
  int64_t batch_size = 256;
  int64_t steps = 100;
  int64_t warmup = 5;
  std::vector<parallel::StrategyKind> strategies = {parallel::StrategyKind::single, parallel::StrategyKind::dp,
                                                    parallel::StrategyKind::ddp,
                                                    parallel::StrategyKind::ddp_unbucketed};
  OptimizerArgs optimizer{.lr = 0.1};
  uint64_t seed = 0;
  std::string data_dir = data::kFashionMnistDir;
  std::string device = "cpu";
  int threads = 0;
  std::string out = "compare-results";
  std::string trace;
  double comm_timeout = parallel::kDefaultCommTimeout.count() / 1000.0;  // seconds
  bool predict = false;
  bool plots = true;
  bool check = true;
  double bucket_mb = 0;  // 0: DDP's default caps
  bool sync_bn = false;
  parallel::GradCompression grad_compression = parallel::GradCompression::none;
  int cores_per_device = 0;      // 0: the cores divided among the largest device count
  int64_t batch_per_device = 0;  // weak scaling: the global batch is this times the devices
  std::string comm = "local";    // mpi: ddp across the processes mpirun started
  std::string link = "none";     // an emulated interconnect between the logical devices
  int repeats = 1;               // of the whole sweep, interleaved; each run's median is reported
};

// What every rank of `duet compare --comm mpi` must share (rank_agreement.h).
NamedSettings compare_rank_settings(const CompareArgs& args) {
  auto number = [](double value) {
    std::ostringstream text;
    text << std::setprecision(17) << value;
    return text.str();
  };
  return {{"model", args.model},
          {"batch_size", std::to_string(args.batch_size)},
          {"batch_per_device", std::to_string(args.batch_per_device)},
          {"steps", std::to_string(args.steps)},
          {"warmup", std::to_string(args.warmup)},
          {"strategies", joined_names(args.strategies)},
          {"optimizer", args.optimizer.name},
          {"lr", number(args.optimizer.lr)},
          {"momentum", number(args.optimizer.momentum)},
          {"weight_decay", number(args.optimizer.weight_decay)},
          {"amsgrad", args.optimizer.amsgrad ? "true" : "false"},
          {"seed", std::to_string(args.seed)},
          {"bucket_mb", number(args.bucket_mb)},
          {"sync_bn", args.sync_bn ? "true" : "false"},
          {"grad_compression", parallel::name(args.grad_compression)},
          {"check", args.check ? "true" : "false"},
          {"repeats", std::to_string(args.repeats)}};
}

bool has_strategy(const CompareArgs& args, parallel::StrategyKind kind) {
  return std::count(args.strategies.begin(), args.strategies.end(), kind) > 0;
}

// The runs in order: single first (the reference for the parameter differences and the cost
// model), then every other strategy at every device count. Weak scaling gives each run
// batch_per_device rows per device.
std::vector<parallel::StrategyRun> plan_runs(const CompareArgs& args, const std::vector<int>& counts) {
  std::vector<parallel::StrategyRun> runs;
  const int64_t b = args.batch_per_device;
  if (has_strategy(args, parallel::StrategyKind::single)) runs.push_back({parallel::StrategyKind::single, 1, b});
  for (int n : counts) {
    for (parallel::StrategyKind s : args.strategies) {
      if (s != parallel::StrategyKind::single) runs.push_back({s, n, b * n});
    }
  }
  return runs;
}

// "step 37/105" on a terminal, redrawn in place; a line per run otherwise (CI logs).
class RunProgress {
 public:
  RunProgress() : terminal_(::isatty(STDERR_FILENO)) {}
  void start(size_t index, size_t count, const std::string& what) {
    std::snprintf(prefix_, sizeof prefix_, "[%zu/%zu] %s", index + 1, count, what.c_str());
    if (!terminal_) std::fprintf(stderr, "%s ...\n", prefix_);
  }
  void step(int64_t done, int64_t total) {
    if (terminal_)
      std::fprintf(stderr, "\r%s: step %lld/%lld", prefix_, static_cast<long long>(done),
                   static_cast<long long>(total));
  }
  void finish(const parallel::RunMeasurement& m) {
    std::fprintf(stderr, "%s%s: %.0f img/s\n", terminal_ ? "\r" : "", prefix_, m.images_per_second);
  }

 private:
  bool terminal_;
  char prefix_[96] = "";
};

// --predict: every strategy on 2, 4 and 8 GPUs (and the measured counts) over the presets, at
// the run's batch (strong scaling) or batch per device (weak).
std::vector<PredictionRow> predictions(const CompareArgs& args, const parallel::StepProfile& profile,
                                       const std::vector<int>& measured_counts,
                                       const std::vector<parallel::RunMeasurement>& runs) {
  std::set<int> counts(measured_counts.begin(), measured_counts.end());
  counts.insert({2, 4, 8});
  const parallel::Links nvlink = parallel::nvlink_links(), pcie = parallel::pcie_links();
  std::vector<PredictionRow> rows;
  auto add = [&](parallel::StrategyKind strategy, int n) {
    const int64_t batch = args.batch_per_device > 0
                              ? args.batch_per_device * (strategy == parallel::StrategyKind::single ? 1 : n)
                              : args.batch_size;
    PredictionRow row{.strategy = strategy, .devices = n};
    row.batch_size = batch;
    for (const auto& run : runs) {
      if (run.strategy == strategy && run.devices == n) row.measured_ms = run.ms_per_step;
    }
    row.nvlink = parallel::predict_step(strategy, n, batch, profile, nvlink);
    row.pcie = parallel::predict_step(strategy, n, batch, profile, pcie);
    if (args.batch_per_device == 0) {  // the closed form divides a fixed batch's compute by n
      row.closed_nvlink = parallel::predict(strategy, n, parallel::nvlink(), profile);
      row.closed_pcie = parallel::predict(strategy, n, parallel::pcie(), profile);
    }
    rows.push_back(row);
  };
  add(parallel::StrategyKind::single, 1);
  for (parallel::StrategyKind s : args.strategies) {
    if (s == parallel::StrategyKind::single) continue;
    for (int n : counts) add(s, n);
  }
  return rows;
}

// The files in --out, by name.
const std::vector<std::string> kOutFiles = {"results.json", "results.csv", "phases.png", "throughput.png",
                                            "speedup.png"};

// What write_outputs may write, beside the dataset it reads.
std::vector<RunFile> output_files(const CompareArgs& args) {
  std::vector<RunFile> files = dataset_files(args.data_dir);
  for (const std::string& name : kOutFiles) {
    files.push_back({"--out's " + name, (std::filesystem::path(args.out) / name).string(), true});
  }
  if (!args.trace.empty()) files.push_back({"--trace", args.trace, true});
  return files;
}

// The files, each failure reported and counted but not stopping the others.
int write_outputs(const CompareArgs& args, const CompareReport& report) {
  namespace fs = std::filesystem;
  int failures = 0;
  auto attempt = [&](const std::string& what, const std::function<void()>& write) {
    try {
      write();
      std::cout << "wrote " << what << "\n";
    } catch (const std::exception& e) {
      std::cerr << "duet compare: " << e.what() << "\n";
      ++failures;
    }
  };
  const std::string title = args.model + ", batch " + std::to_string(args.batch_size) + ", " + report.device_kind;
  const fs::path dir(args.out);
  attempt((dir / "results.json").string(), [&] { write_results_json(report, (dir / "results.json").string()); });
  attempt((dir / "results.csv").string(), [&] { write_results_csv(report, (dir / "results.csv").string()); });
  if (args.plots) {
    attempt((dir / "phases.png").string(), [&] { plot_phases(report.runs, (dir / "phases.png").string(), title); });
    if (args.devices.size() > 1) {
      attempt((dir / "throughput.png").string(),
              [&] { plot_throughput(report.runs, (dir / "throughput.png").string(), title); });
    }
    if (!report.simulated.empty()) {
      attempt((dir / "speedup.png").string(), [&] { plot_speedup(report, (dir / "speedup.png").string(), title); });
    }
  }
  if (!args.trace.empty()) attempt(args.trace, [&] { write_chrome_trace(report.runs, args.trace); });
  return failures ? kFailed : 0;
}

// The device counts the sweep runs, and where its logical CPU devices run: cores of their own
// (the counts the cores cannot serve are left out, with a note) unless --threads asks for one
// shared pool. Under mpirun, this process's one device takes its share of the cores.
std::vector<int> place_sweep(const CompareArgs& args, Device device, const parallel::Communicator* comm,
                             CompareReport& report) {
  std::vector<int> counts = comm ? std::vector<int>{comm->world_size()} : args.devices;
  if (!device.is_cpu()) {
    report.device_kind = "CUDA devices";
    return counts;
  }
  if (args.threads > 0) {
    report.device_kind = "logical CPU devices sharing " + std::to_string(kernels::num_threads()) + " threads";
    return counts;
  }
  const CoreShare share = process_cores();
  int per_device = args.cores_per_device;
  if (!comm) {
    parallel::SweepPlan plan = parallel::plan_sweep(counts, share.count, args.cores_per_device);
    for (const std::string& skipped : plan.skipped) report.notes.push_back(skipped);
    counts = plan.device_counts;
    per_device = plan.cores_per_device;
  }
  const int largest = counts.empty() ? 1 : std::max(1, counts.back());
  const std::string placed = place_devices(comm ? 1 : largest, per_device, share);
  report.notes.push_back((comm ? "this rank's device: " : "") + placed);
  const CpuPlacement placement = cpu_placement();
  report.device_kind = placement.pinned()
                           ? std::string(comm ? "one MPI rank per process, " : "logical CPU devices, ") +
                                 std::to_string(placement.cores_per_device) + " core(s) each, pinned"
                           : "logical CPU devices sharing " + std::to_string(kernels::num_threads()) + " threads";
  return counts;
}

// Every measured run's step as the cost model predicts it from the single-device run, under the
// compute load measured just before that run.
void predict_runs(const parallel::StepProfile& profile, const parallel::Links& links, CompareReport& report) {
  for (size_t i = 0; i < report.runs.size(); ++i) {
    const parallel::RunMeasurement& run = report.runs[i];
    parallel::Links at_start = links;
    at_start.compute_slowdown = report.compute_slowdown[i].value_or(1);
    report.simulated.push_back(parallel::predict_step(run.strategy, run.devices, run.batch_size, profile, at_start));
  }
}

// What is wrong with --strategies given the other flags, or "".
std::string strategies_problem(const CompareArgs& args) {
  if (args.predict && !has_strategy(args, parallel::StrategyKind::single)) {
    return "--predict needs the measured single-device compute: add single to --strategies";
  }
  if (args.comm == "mpi" && args.link != "none") {
    return "--link emulates links between the devices of one process; under --comm mpi the ranks talk over MPI's "
           "own links: drop --link";
  }
  if (args.comm == "mpi") {
    for (parallel::StrategyKind s : args.strategies) {
      if (s != parallel::StrategyKind::single && !parallel::runs_across_processes(s)) {
        return "--comm mpi runs the ddp variants across processes (all but ddp-d2l; single on rank 0); drop " +
               parallel::to_string(s) + " from --strategies";
      }
    }
  }
  if (args.grad_compression != parallel::GradCompression::none) {
    if (args.comm == "mpi") return "--grad-compression runs on the local communicators only, not under --comm mpi";
    if (has_strategy(args, parallel::StrategyKind::ddp_d2l))
      return "--grad-compression compresses a communicator's all-reduce, and ddp-d2l uses none: drop ddp-d2l from "
             "--strategies";
    if (has_strategy(args, parallel::StrategyKind::zero1))
      return "--grad-compression compresses ddp's all-reduce, and zero1 reduce-scatters: drop zero1 from --strategies";
  }
  return "";
}

// The experiment every run shares; `args` must outlive it (its optimizer factory reads them).
parallel::ExperimentConfig experiment_config(const CompareArgs& args, Device device,
                                             std::shared_ptr<parallel::Communicator> comm) {
  parallel::ExperimentConfig config{
      .model = args.model,
      .batch_size = args.batch_per_device > 0 ? args.batch_per_device : args.batch_size,
      .steps = args.steps,
      .warmup = args.warmup,
      .seed = args.seed,
      .make_optimizer =
          [&args](std::vector<Tensor> params) { return make_optimizer(args.optimizer, std::move(params)); },
      .first_device = device,
      .ddp = {.sync_batchnorm = args.sync_bn,
              .grad_compression = args.grad_compression,
              .comm_timeout = comm_timeout(args.comm_timeout)},
      .link = parallel::link_model(args.link),
      .check = args.check,
      .comm = std::move(comm)};
  if (args.bucket_mb > 0) {
    // PyTorch's bucket_cap_mb caps the buckets after the first; a cap below the first bucket's
    // 1 MiB caps that one too, or a small model would still fit in one bucket.
    config.ddp.bucket_cap_mb = args.bucket_mb;
    config.ddp.first_bucket_mb = std::min(config.ddp.first_bucket_mb, args.bucket_mb);
  }
  return config;
}

// Calibrates the links, runs every planned run (each after measuring its compute load), and on
// the leader predicts each measured run from the single-device one. Every rank calls it.
void run_sweep(const CompareArgs& args, const std::vector<int>& counts, parallel::Experiment& experiment,
               const data::TensorDataset& probe_examples, CompareReport& report) {
  const Device device = report.config.first_device;
  const std::shared_ptr<parallel::Communicator>& comm = report.config.comm;
  const bool leader = !comm || comm->rank() == 0;
  const bool has_single = has_strategy(args, parallel::StrategyKind::single);
  // Measure the links in use before the sweep, with nothing else running.
  CalibratedLinks links;
  const bool parallel_runs = comm || std::any_of(counts.begin(), counts.end(), [](int n) { return n >= 2; });
  if (has_single && parallel_runs) {
    links = calibrate_links(device, counts, has_strategy(args, parallel::StrategyKind::ddp_naive), comm,
                            report.config.link);
    report.calibration = links.fits;
    report.replica_threads_ms = links.links.replica_threads_ms;
  }
  const std::vector<parallel::StrategyRun> runs = plan_runs(args, counts);
  const bool probe_overhead = has_single && parallel_runs && !comm;
  RunProgress progress;
  auto on_step = [&](int64_t done, int64_t total) {
    if (leader) progress.step(done, total);
  };
  ComputeLoad load(device, comm, args.model, report.example_shape);
  // Each run's largest shard, where its devices' compute is timed before it.
  auto shard_rows = [&](const parallel::StrategyRun& run, int devices) {
    const int64_t batch = run.batch_size > 0 ? run.batch_size : report.config.batch_size;
    return (batch + devices - 1) / devices;
  };
  // Every repeat runs the whole sweep, so that a drift of the machine's speed reaches every
  // strategy's repeats alike (repeats.h).
  std::vector<std::vector<parallel::RunMeasurement>> measured(runs.size());
  std::vector<std::vector<double>> slowdowns(runs.size());
  std::map<std::pair<parallel::StrategyKind, int>, std::vector<parallel::StepOverhead>> overheads;
  const size_t total = runs.size() * static_cast<size_t>(args.repeats);
  for (int repeat = 0; repeat < args.repeats; ++repeat) {
    if (probe_overhead) {
      // What each strategy's step costs beyond the simulation, from steps of almost no compute.
      for (const parallel::StepOverhead& o :
           parallel::measure_step_overhead(report.config, probe_examples, runs, links.links))
        overheads[{o.strategy, o.devices}].push_back(o);
    }
    for (size_t i = 0; i < runs.size(); ++i) {
      // Across processes single-device training runs on rank 0 alone; the others wait for it
      // in the compute load's barrier, or the next run's first collective.
      const bool single = runs[i].strategy == parallel::StrategyKind::single;
      if (comm && single && !leader) continue;
      const int devices = single ? 1 : comm ? comm->world_size() : runs[i].devices;
      if (leader)
        progress.start(static_cast<size_t>(repeat) * runs.size() + i, total,
                       parallel::to_string(runs[i].strategy) + " on " + std::to_string(devices) + " device(s)");
      if (!report.calibration.empty()) {
        if (single) load.before_single(shard_rows(runs[i], 1));
        slowdowns[i].push_back(single ? 1.0 : load.before_run(devices, shard_rows(runs[i], devices)));
      }
      measured[i].push_back(experiment.run(runs[i], on_step));
      if (leader) progress.finish(measured[i].back());
    }
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    if (measured[i].empty()) continue;  // single, on the ranks but rank 0
    report.runs.push_back(parallel::median_repeat(std::move(measured[i])));
    report.compute_slowdown.push_back(slowdowns[i].empty() ? std::nullopt
                                                           : std::optional<double>(parallel::median(slowdowns[i])));
  }
  if (probe_overhead && overheads.empty()) {
    const parallel::StepOverheadProbe probe;  // the defaults measure_step_overhead ran with
    std::ostringstream note;
    note << "step overhead not probed: single's step at " << probe.rows_per_device << " rows per device took "
         << probe.negligible_above_ms << " ms or more, where a strategy's overhead per step is within the noise";
    report.notes.push_back(note.str());
  }
  // Each strategy's overhead: the probe of the median excess.
  for (auto& [key, probes] : overheads) {
    std::stable_sort(probes.begin(), probes.end(),
                     [](const parallel::StepOverhead& a, const parallel::StepOverhead& b) { return a.ms() < b.ms(); });
    const parallel::StepOverhead& typical = probes[(probes.size() - 1) / 2];
    report.step_overhead.push_back(typical);
    links.links.step_overhead_ms[key] = typical.ms();
  }
  if (!leader || !has_single) return;
  const auto single = std::find_if(report.runs.begin(), report.runs.end(), [](const parallel::RunMeasurement& r) {
    return r.strategy == parallel::StrategyKind::single;
  });
  const parallel::StepProfile profile = experiment.profile(*single);
  if (!report.calibration.empty()) predict_runs(profile, links.links, report);
  if (args.predict) report.predictions = predictions(args, profile, counts, report.runs);
}

// The per-step check's single-device step runs on a logical CPU device of its own, the one after
// a local run's last device: the largest --devices count must leave it free.
void check_room_for_step_check(const CompareArgs& args, Device device, const parallel::Communicator* comm) {
  if (comm || !device.is_cpu() || !args.check || args.devices.empty()) return;
  const int largest = args.devices.back();
  DUET_CHECK(device.index + largest < kMaxDevicesPerType, "--devices ", largest, " from ", device,
             ": the per-step check needs one more logical CPU device after them, cpu:", device.index + largest,
             ", but duet has ", kMaxDevicesPerType, " (cpu:0 to cpu:", kMaxDevicesPerType - 1, "); give at most ",
             kMaxDevicesPerType - 1 - device.index, " devices, or --no-check");
}

int run_compare(CompareArgs args) {
  std::sort(args.devices.begin(), args.devices.end());
  args.devices.erase(std::unique(args.devices.begin(), args.devices.end()), args.devices.end());
  if (std::string problem = strategies_problem(args); !problem.empty()) {
    std::cerr << "duet compare: error: " << problem << "\n";
    return kBadInput;
  }
  if (std::string note = clamp_threads(args.threads, "--threads"); !note.empty()) std::cout << "note: " << note << "\n";
  if (args.threads > 0) kernels::set_num_threads(args.threads);
  // The per-phase columns are the point: on GPUs each phase waits for its devices' work.
  parallel::set_exact_gpu_phases(true);
  Device device;
  data::TensorDataset train_set;
  std::shared_ptr<parallel::Communicator> comm;
  CompareReport report;
  std::vector<int> counts;
  try {
    device = Device::parse(args.device);
    const std::string problem = optimizer_args_problem(args.optimizer);
    DUET_CHECK(problem.empty(), problem);
    if (args.comm == "mpi") {
      DUET_CHECK(started_by_mpirun(),
                 "--comm mpi: this process was not started by mpirun; run `mpirun -np N duet "
                 "compare --comm mpi --strategies single,ddp ...`");
      DUET_CHECK(device.is_cpu(), "--comm mpi: duet compare runs its ranks on CPU devices");
      comm = parallel::make_mpi_communicator({.timeout = comm_timeout(args.comm_timeout), .device = device});
      check_ranks_agree(*comm, compare_rank_settings(args));
    }
    // Every count asked for names devices that exist, before the ones the cores cannot serve are skipped.
    if (!comm && !args.devices.empty()) device_group(device, args.devices.back(), "--devices");
    check_room_for_step_check(args, device, comm.get());
    counts = place_sweep(args, device, comm.get(), report);
    DUET_CHECK(
        !counts.empty() || args.strategies == std::vector<parallel::StrategyKind>{parallel::StrategyKind::single},
        "--devices: no device count fits the cores of this machine (--cores-per-device ", args.cores_per_device, ")");
    if (!comm || comm->rank() == 0) {
      // Every output path first: a bad one fails now, not after every strategy has run.
      check_no_collisions(output_files(args));
      prepare_output_folder("--out", args.out);
      if (args.plots) check_gnuplot("the plots", ", or pass --no-plots");
      if (!args.trace.empty()) check_output_file("--trace", args.trace);
    }
    parallel::link_model(args.link);  // a bad --link fails here, before anything runs
    train_set = data::FashionMNIST::train(args.data_dir);
    const Shape images = train_set.images.sizes();
    report.example_shape.assign(images.begin() + 1, images.end());
  } catch (const Error& e) {
    std::cerr << "duet compare: error: " << e.what() << "\n";
    if (comm) comm->abort(std::string("duet compare: ") + e.what());
    return kBadInput;
  }
  const bool leader = !comm || comm->rank() == 0;
  for (const std::string& note : report.notes) {
    if (leader && note.rfind("skipping", 0) == 0) std::cerr << "duet compare: " << note << "\n";
  }
  report.config = experiment_config(args, device, comm);
  report.weak_scaling = args.batch_per_device > 0;
  report.repeats = args.repeats;
  // A few examples for the step-overhead probe (the loader goes round them).
  const int64_t probe_size = std::min<int64_t>(train_set.size(), 64);
  const data::TensorDataset probe_examples{train_set.images.narrow(0, 0, probe_size).contiguous(),
                                           train_set.labels.narrow(0, 0, probe_size).contiguous()};
  parallel::Experiment experiment(report.config, std::move(train_set));
  try {
    run_sweep(args, counts, experiment, probe_examples, report);
    if (!leader) return 0;
  } catch (const Error& e) {
    std::cerr << "\nduet compare: " << e.what() << "\n";
    if (comm) comm->abort(std::string("duet compare: ") + e.what());
    return kFailed;
  }
  print_results(report, stdout);
  print_model_check(report, stdout);
  print_predictions(report, stdout);
  std::fflush(stdout);
  return write_outputs(args, report);
}

}  // namespace

void add_compare_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<CompareArgs>();
  CLI::App* cmd = app.add_subcommand("compare",
                                     "Train single-device, DataParallel and DDP on the same batches and "
                                     "compare their time per phase, bytes, memory and parameters");
  cmd->add_option("--model", args->model, "Model to train")
      ->check(CLI::IsMember(nn::models::names()))
      ->capture_default_str();
  cmd->add_option("--devices", args->devices, "Device counts for the parallel strategies, e.g. 1,2,4")
      ->delimiter(',')
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--batch-size", args->batch_size, "Images per global batch")->check(kPositive)->capture_default_str();
  cmd->add_option("--steps", args->steps, "Timed steps per strategy")->check(kPositive)->capture_default_str();
  cmd->add_option("--warmup", args->warmup, "Untimed steps before them")->check(kNonNegative)->capture_default_str();
  add_strategies_flag(*cmd, "--strategies", args->strategies);
  add_optimizer_flags(*cmd, args->optimizer);
  cmd->add_option("--seed", args->seed, "Seed for the initial weights and the batch order")
      ->check(kSeed)
      ->capture_default_str();
  cmd->add_option("--data-dir", args->data_dir, "Folder with the Fashion-MNIST IDX files")->capture_default_str();
  cmd->add_option("--device", args->device, "First device: cpu (logical cpu:0..N-1) or cuda")->capture_default_str();
  cmd->add_option("--threads", args->threads,
                  "CPU threads of one pool that every logical device shares, "
                  "instead of cores of their own (0: cores per device)")
      ->check(kNonNegative)
      ->capture_default_str();
  add_comm_timeout_flag(*cmd, args->comm_timeout);
  cmd->add_option("--out", args->out, "Folder for results.json, results.csv and the plots")->capture_default_str();
  cmd->add_option("--trace", args->trace, "Write a Chrome trace-event JSON of every phase on every device here");
  cmd->add_flag("--predict", args->predict,
                "Also print the cost model's step times on 2, 4 and 8 GPUs (NVLink and "
                "PCIe presets)");
  cmd->add_flag("!--no-plots", args->plots, "Skip the PNG plots");
  cmd->add_flag("!--no-check", args->check,
                "Skip the per-step check (one more single-device step per step, from the strategy's parameters)");
  cmd->add_option("--bucket-mb", args->bucket_mb,
                  "ddp's bucket cap in MiB (PyTorch's bucket_cap_mb; caps the first "
                  "bucket too when below its 1 MiB)")
      ->check(in_range(1e-6, kMaxBucketMb, "a size in MiB"));
  add_grad_compression_flag(*cmd, args->grad_compression);
  cmd->add_flag("--sync-bn", args->sync_bn,
                "ddp variants: BatchNorm with the global batch's statistics (SyncBatchNorm)");
  cmd->add_option("--cores-per-device", args->cores_per_device,
                  "Cores of its own for each logical CPU device, its threads pinned there (default: the cores divided "
                  "among the largest --devices count; device counts the cores cannot serve are skipped)")
      ->check(kPositive);
  cmd->add_option("--batch-per-device", args->batch_per_device,
                  "Weak scaling: a global batch of this many images per device (default: strong scaling, a fixed "
                  "--batch-size)")
      ->check(kPositive);
  cmd->add_option("--link", args->link,
                  "Emulated interconnect between the logical devices: none, nvlink, pcie, pcie-no-p2p, 10gbe, 1gbe, or "
                  "ALPHA_US,BETA_GBPS; every message between two devices then takes at least alpha + bytes / beta")
      ->capture_default_str();
  cmd->add_option("--repeats", args->repeats,
                  "Runs of the whole sweep, one after another; each row is its run of median step time, "
                  "the prediction from single's median run (the check covers every repeat)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--comm", args->comm,
                  "local: devices in this process; mpi: ddp with one rank per process under "
                  "mpirun (single runs on rank 0)")
      ->check(CLI::IsMember({"local", "mpi"}))
      ->capture_default_str();
  cmd->callback([args, cmd, &exit_code] {
    std::set<std::string> given;
    for (const CLI::Option* option : cmd->get_options()) {
      if (option->count() > 0) given.insert(option->get_name());
    }
    try {
      check_paths_given(given, {{"--out", args->out}, {"--trace", args->trace}, {"--data-dir", args->data_dir}});
    } catch (const Error& e) {
      std::cerr << "duet compare: error: " << e.what() << "\n";
      exit_code = kBadInput;
      return;
    }
    exit_code = run_compare(*args);
  });
}

}  // namespace duet::apps
