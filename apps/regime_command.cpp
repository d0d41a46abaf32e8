#include "regime_command.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <set>

#include "build_info.h"
#include "cli_common.h"
#include "compare_prediction.h"
#include "duet/core/placement.h"
#include "duet/data/fashion_mnist.h"
#include "duet/nn/models/models.h"
#include "duet/parallel/comm/link_model.h"
#include "duet/parallel/lab/experiment.h"
#include "duet/parallel/lab/scaling_sweep.h"
#include "file_collisions.h"
#include "output_paths.h"
#include "process_cores.h"
#include "regime_plot.h"
#include "regime_report.h"
#include "strategy_flags.h"

namespace duet::apps {
namespace {

using parallel::StrategyKind;

// The measured device count: the most that a 2-core machine gives a core each.
constexpr int kMeasuredDevices = 2;
const std::vector<int> kPredictedDevices = {2, 4, 8};

struct RegimeArgs {
  std::vector<std::string> models = {"mlp", "lenet", "lenet-relu"};  // resnet18: tens of seconds a step on a core
  std::vector<std::string> links = parallel::link_preset_names();
  std::vector<StrategyKind> strategies = {StrategyKind::single, StrategyKind::dp, StrategyKind::ddp,
                                          StrategyKind::ddp_d2l};
  int64_t batch_size = 256;
  int64_t steps = 100;
  int64_t warmup = 5;
  OptimizerArgs optimizer{.lr = 0.1};
  uint64_t seed = 0;
  std::string data_dir = data::kFashionMnistDir;
  std::string out = "regime-results";
  int cores_per_device = 1;
  bool plots = true;
  bool check = true;
};

const std::vector<std::string> kOutFiles = {"regime.csv", "regime.json", "regime-map.png", "speedup.png"};

// "[k/n] model link strategy on N device(s)": a line when a run starts and one when it ends.
class SweepProgress {
 public:
  explicit SweepProgress(size_t total) : total_(total) {}
  void start(const std::string& model, const std::string& link, StrategyKind s, int devices) {
    ++done_;
    std::snprintf(prefix_, sizeof prefix_, "[%zu/%zu] %s %s %s on %d device(s)", done_, total_, model.c_str(),
                  link.c_str(), parallel::to_string(s).c_str(), devices);
    std::fprintf(stderr, "%s ...\n", prefix_);
  }
  void finish(const parallel::RunMeasurement& m) {
    std::fprintf(stderr, "%s: %.1f ms per step, %.0f img/s\n", prefix_, m.ms_per_step, m.images_per_second);
  }

 private:
  size_t total_;
  size_t done_ = 0;
  char prefix_[160] = "";
};

// Each item once, in the order first given (a link or model named twice would be one cell).
template <class T> std::vector<T> once_each(const std::vector<T>& items) {
  std::vector<T> out;
  for (const T& item : items) {
    if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
  }
  return out;
}

// Single first: the reference every run of a model is checked and predicted from.
std::vector<StrategyKind> single_first(std::vector<StrategyKind> strategies) {
  strategies = once_each(strategies);
  std::stable_partition(strategies.begin(), strategies.end(), [](StrategyKind s) { return s == StrategyKind::single; });
  return strategies;
}

parallel::RegimePoint point_of(const std::string& model, const std::string& link, StrategyKind strategy, int devices,
                               int64_t batch, double ms_per_step) {
  return {.model = model,
          .link = link,
          .strategy = strategy,
          .devices = devices,
          .measured = false,
          .batch_size = batch,
          .ms_per_step = ms_per_step,
          .images_per_second = ms_per_step > 0 ? static_cast<double>(batch) * 1e3 / ms_per_step : 0};
}

// The calibrated links, with a step's thread start and join at every predicted device count:
// measured on kMeasuredDevices only, and n / kMeasuredDevices times that on n, since the step
// starts and joins one thread per device, one after another. Left at 0 (the predictor's default
// for a count not measured), 4 and 8 devices would look cheaper than 2 on a model whose step is
// a few ms.
parallel::Links with_thread_starts(parallel::Links links) {
  const auto measured = links.replica_threads_ms.find(kMeasuredDevices);
  if (measured == links.replica_threads_ms.end()) return links;
  for (int n : kPredictedDevices) {
    if (!links.replica_threads_ms.count(n)) links.replica_threads_ms[n] = measured->second * n / kMeasuredDevices;
  }
  return links;
}

// One model over one link (args.strategies single first): every strategy measured, each measured run predicted under
// the compute load measured just before it, and every strategy predicted on kPredictedDevices devices with each device
// computing as fast as the single-device run did.
void sweep_cell(const RegimeArgs& args, const std::string& model, const std::string& link_name,
                const parallel::LinkModel& link, const CalibratedLinks& links, const data::TensorDataset& train,
                const Shape& example, SweepProgress& progress, std::vector<parallel::RegimePoint>& points) {
  const Device first = cpu(0);
  parallel::ExperimentConfig config{
      .model = model,
      .batch_size = args.batch_size,
      .steps = args.steps,
      .warmup = args.warmup,
      .seed = args.seed,
      .make_optimizer =
          [&args](std::vector<Tensor> params) { return make_optimizer(args.optimizer, std::move(params)); },
      .first_device = first,
      .link = link,
      .check = args.check};
  parallel::Experiment experiment(config, train);
  ComputeLoad load(first, nullptr, model, example);
  const int64_t shard = (args.batch_size + kMeasuredDevices - 1) / kMeasuredDevices;
  std::vector<std::pair<parallel::RunMeasurement, double>> runs;  // with its compute slowdown
  for (StrategyKind s : args.strategies) {
    const bool single = s == StrategyKind::single;
    const int devices = single ? 1 : kMeasuredDevices;
    progress.start(model, link_name, s, devices);
    double slowdown = 1;
    if (single) {
      load.before_single({shard});
    } else {
      slowdown = load.before_run(devices, shard);
    }
    runs.emplace_back(experiment.run({s, devices, args.batch_size}), slowdown);
    progress.finish(runs.back().first);
  }
  const parallel::StepProfile profile = experiment.profile();
  for (const auto& [run, slowdown] : runs) {
    parallel::Links under_load = links.links;
    under_load.compute_slowdown = slowdown;
    parallel::RegimePoint p = point_of(model, link_name, run.strategy, run.devices, run.batch_size, run.ms_per_step);
    p.measured = true;
    p.images_per_second = run.images_per_second;
    p.max_check_ulps = run.max_check_ulps;
    p.compute_slowdown = slowdown;
    p.predicted_ms = parallel::predict_step(run.strategy, run.devices, run.batch_size, profile, under_load).step_ms;
    points.push_back(p);
  }
  const parallel::Links predicting = with_thread_starts(links.links);
  for (StrategyKind s : args.strategies) {
    const bool single = s == StrategyKind::single;
    for (int n : single ? std::vector<int>{1} : kPredictedDevices) {
      const double ms = parallel::predict_step(s, n, args.batch_size, profile, predicting).step_ms;
      points.push_back(point_of(model, link_name, s, n, args.batch_size, ms));
    }
  }
}

// What is wrong with the flags, or "".
std::string args_problem(const RegimeArgs& args) {
  if (std::find(args.strategies.begin(), args.strategies.end(), StrategyKind::single) == args.strategies.end())
    return "--strategies: the map compares with single-device training and predicts from it: add single";
  return optimizer_args_problem(args.optimizer);
}

std::vector<RunFile> output_files(const RegimeArgs& args) {
  std::vector<RunFile> files = dataset_files(args.data_dir);
  for (const std::string& name : kOutFiles)
    files.push_back({"--out's " + name, (std::filesystem::path(args.out) / name).string(), true});
  return files;
}

// The files, each failure reported and counted but not stopping the others.
int write_outputs(const RegimeArgs& args, const RegimeReport& report) {
  const std::filesystem::path dir(args.out);
  int failures = 0;
  auto attempt = [&](const std::string& name, const std::function<void(const std::string&)>& write) {
    const std::string path = (dir / name).string();
    try {
      write(path);
      std::cout << "wrote " << path << "\n";
    } catch (const std::exception& e) {
      std::cerr << "duet regime: " << e.what() << "\n";
      ++failures;
    }
  };
  attempt("regime.csv", [&](const std::string& path) { write_regime_csv(report, path); });
  attempt("regime.json", [&](const std::string& path) { write_regime_json(report, path); });
  if (args.plots) {
    attempt("regime-map.png", [&](const std::string& path) { plot_regime_map(report, path); });
    attempt("speedup.png", [&](const std::string& path) { plot_regime_speedup(report, path); });
  }
  return failures ? kFailed : 0;
}

int run_regime(RegimeArgs args) {
  args.strategies = single_first(args.strategies);
  args.models = once_each(args.models);
  args.links = once_each(args.links);
  if (std::string problem = args_problem(args); !problem.empty()) {
    std::cerr << "duet regime: error: " << problem << "\n";
    return kBadInput;
  }
  RegimeReport report{.models = args.models,
                      .links = args.links,
                      .strategies = args.strategies,
                      .measured_devices = kMeasuredDevices,
                      .predicted_devices = kPredictedDevices,
                      .batch_size = args.batch_size,
                      .steps = args.steps,
                      .warmup = args.warmup,
                      .seed = args.seed,
                      .optimizer = args.optimizer.name,
                      .lr = args.optimizer.lr,
                      .check = args.check,
                      .build = build_info(),
                      .machine = machine_info(),
                      .started_utc = utc_now()};
  std::vector<parallel::LinkModel> links;
  data::TensorDataset train;
  Shape example;
  try {
    for (const std::string& name : args.links) links.push_back(parallel::link_model(name));
    const CoreShare share = process_cores();
    const parallel::SweepPlan plan = parallel::plan_sweep({kMeasuredDevices}, share.count, args.cores_per_device);
    DUET_CHECK(!plan.device_counts.empty(), "--cores-per-device ", args.cores_per_device, ": ", kMeasuredDevices,
               " devices need ", kMeasuredDevices * args.cores_per_device, " cores, and this process may use ",
               share.count);
    check_no_collisions(output_files(args));
    prepare_output_folder("--out", args.out);
    if (args.plots) check_gnuplot("the plots", ", or pass --no-plots");
    std::cout << "note: " << place_devices(kMeasuredDevices, args.cores_per_device, share) << "\n";
    report.device_kind = std::to_string(kMeasuredDevices) + " logical CPU devices, " +
                         std::to_string(cpu_placement().cores_per_device) + " core(s) each" +
                         (cpu_placement().pinned() ? ", pinned" : "");
    train = data::FashionMNIST::train(args.data_dir);
    const Shape images = train.images.sizes();
    example.assign(images.begin() + 1, images.end());
  } catch (const Error& e) {
    std::cerr << "duet regime: error: " << e.what() << "\n";
    return kBadInput;
  }
  const std::string& built = report.build.built_commit;
  if (!report.build.checkout_commit.empty() && built.rfind(report.build.checkout_commit, 0) != 0) {
    std::cerr << "duet regime: note: built from " << report.build.built_commit << ", but the checkout is at "
              << report.build.checkout_commit << " now: rebuild for results of this commit\n";
  }
  const auto started = std::chrono::steady_clock::now();
  SweepProgress progress(args.models.size() * args.links.size() * args.strategies.size());
  try {
    for (size_t l = 0; l < links.size(); ++l) {
      // The link's costs, measured once for every model, before anything else runs over it.
      std::fprintf(stderr, "calibrating %s ...\n", links[l].describe().c_str());
      const bool naive = std::count(args.strategies.begin(), args.strategies.end(), StrategyKind::ddp_naive) > 0;
      const CalibratedLinks calibrated = calibrate_links(cpu(0), {kMeasuredDevices}, naive, nullptr, links[l]);
      report.calibration.emplace_back(args.links[l], calibrated.fits);
      for (const std::string& model : args.models)
        sweep_cell(args, model, args.links[l], links[l], calibrated, train, example, progress, report.points);
    }
  } catch (const Error& e) {
    std::cerr << "\nduet regime: " << e.what() << "\n";
    return kFailed;
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  parallel::fill_speedups(report.points);
  print_regime_map(report, stdout);
  std::printf("(%.0f s)\n", report.seconds);
  std::fflush(stdout);
  return write_outputs(args, report);
}

}  // namespace

void add_regime_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<RegimeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "regime",
      "The regime map: which strategy trains fastest for each model over each emulated link, measured on 2 logical "
      "CPU devices and predicted on 2, 4 and 8; writes regime.csv, regime.json and two plots");
  cmd->add_option("--models", args->models, "Models to measure")
      ->delimiter(',')
      ->check(CLI::IsMember(nn::models::names()))
      ->capture_default_str();
  cmd->add_option("--links", args->links, "Emulated links between the devices (link presets)")
      ->delimiter(',')
      ->check(CLI::IsMember(parallel::link_preset_names()))
      ->capture_default_str();
  add_strategies_flag(*cmd, "--strategies", args->strategies);
  cmd->add_option("--batch-size", args->batch_size, "Images per global batch")->check(kPositive)->capture_default_str();
  cmd->add_option("--steps", args->steps, "Timed steps per strategy, model and link")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--warmup", args->warmup, "Untimed steps before them")->check(kNonNegative)->capture_default_str();
  add_optimizer_flags(*cmd, args->optimizer);
  cmd->add_option("--seed", args->seed, "Seed for the initial weights and the batch order")
      ->check(kSeed)
      ->capture_default_str();
  cmd->add_option("--data-dir", args->data_dir, "Folder with the Fashion-MNIST IDX files")->capture_default_str();
  cmd->add_option("--cores-per-device", args->cores_per_device,
                  "Cores of its own for each of the 2 logical CPU devices, its threads pinned there")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--out", args->out, "Folder for regime.csv, regime.json, regime-map.png and speedup.png")
      ->capture_default_str();
  cmd->add_flag("!--no-plots", args->plots, "Skip the PNG plots");
  cmd->add_flag("!--no-check", args->check,
                "Skip the per-step check (one more single-device step per step, from the strategy's parameters)");
  cmd->callback([args, cmd, &exit_code] {
    std::set<std::string> given;
    for (const CLI::Option* option : cmd->get_options()) {
      if (option->count() > 0) given.insert(option->get_name());
    }
    try {
      check_paths_given(given, {{"--out", args->out}, {"--data-dir", args->data_dir}});
    } catch (const Error& e) {
      std::cerr << "duet regime: error: " << e.what() << "\n";
      exit_code = kBadInput;
      return;
    }
    exit_code = run_regime(*args);
  });
}

}  // namespace duet::apps
