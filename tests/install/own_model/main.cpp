// A program of one's own, against the installed library: a two-layer regression net trained
// with an MSE loss on f32 targets [N, 1] under single-device training, DataParallel on 2
// devices and DDP on 2 devices, with a step schedule applied through set_lr every few steps.
// Every step of dp and ddp must land within a few float ulps of single-device training's step
// from the same parameters (parallel::StepCheck), and every run must end where single-device
// training ends; then an Experiment compares the three strategies on the same model and loss.
// Exits 1, saying what differed, when anything does.
#include <duet/duet.h>

#include <cmath>
#include <iostream>
#include <random>
#include <string>
#include <vector>

using namespace duet;

namespace {

constexpr int64_t kFeatures = 8;
constexpr double kBaseLr = 0.05;
constexpr int64_t kLrEvery = 3;     // steps between learning-rate changes
constexpr double kMaxUlps = 8;      // per step, against single-device training's step
constexpr double kMaxEndUlps = 64;  // after the whole run, against single-device training's

class Regressor : public nn::Cloneable<Regressor> {
 public:
  Regressor() {
    hidden_ = register_module("hidden", nn::Linear(kFeatures, 32));
    out_ = register_module("out", nn::Linear(32, 1));
  }
  Tensor forward(const Tensor& x) override { return out_(tanh(hidden_(x))); }

 private:
  nn::Child<nn::Linear> hidden_;
  nn::Child<nn::Linear> out_;
};

// y = sin(x0) + x1 * x2 - x3 / 2 + noise, over normal features: f32 inputs [n, 8], targets [n, 1].
data::TensorDataset make_data(int64_t n) {
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<size_t>(n * kFeatures)), y(static_cast<size_t>(n));
  for (float& v : x) v = normal(rng);
  for (size_t i = 0; i < y.size(); ++i) {
    const float* f = &x[i * kFeatures];
    y[i] = std::sin(f[0]) + f[1] * f[2] - f[3] / 2 + 0.05f * normal(rng);
  }
  return {from_vector(x, {n, kFeatures}), from_vector(y, {n, 1})};
}

Tensor mse(const Tensor& output, const Tensor& target) { return nn::functional::mse_loss(output, target); }

std::unique_ptr<optim::Optimizer> make_sgd(std::vector<Tensor> params) {
  return std::make_unique<optim::SGD>(std::move(params), optim::SGDOptions{.lr = kBaseLr, .momentum = 0.9});
}

struct Trained {
  double worst_ulps = 0;  // over the steps, against single-device training's step
  double last_loss = 0;
  std::vector<std::vector<double>> params;
};

// One epoch of `strategy` on `devices`, from seed 0's weights, the lr halved every kLrEvery steps.
Trained train(parallel::StrategyKind strategy, int devices, const data::TensorDataset& set) {
  manual_seed(0);
  auto net = std::make_shared<Regressor>();
  std::vector<Device> group;
  for (int d = 0; d < devices; ++d) group.push_back(cpu(d));
  parallel::StrategyOptions options;
  options.loss_fn = mse;
  options.ddp.check_every = 1;  // ddp: every replica equal to rank 0's after every step, or it throws
  std::unique_ptr<parallel::Strategy> trainer = parallel::make_strategy(strategy, net, make_sgd, group, options);
  // The check's single-device copy on a logical device of its own.
  parallel::StepCheck check(std::make_shared<Regressor>(), make_sgd, cpu(devices), mse);
  const optim::StepLR schedule(kLrEvery, 0.5);
  Trained out;
  int64_t step = 0;
  // Batches of 37 rows: 19 + 18 over 2 devices; the epoch's last, of 1 row, leaves the second
  // device without any.
  for (const data::Batch& batch : data::DataLoader(set, {.batch_size = 37, .shuffle = true, .seed = 2})) {
    schedule.apply(*trainer, kBaseLr, step++);  // every replica's optimizer
    check.before(*trainer, batch);
    out.last_loss = trainer->train_step(batch).loss;
    out.worst_ulps = std::max(out.worst_ulps, check.after(*trainer));
  }
  out.params = parallel::parameter_values(trainer->model());
  return out;
}

}  // namespace

int run() {
  const data::TensorDataset set = make_data(1000);
  int failures = 0;
  const Trained single = train(parallel::StrategyKind::single, 1, set);
  std::cout << "single: last loss " << single.last_loss << "\n";
  for (const parallel::StrategyKind strategy : {parallel::StrategyKind::dp, parallel::StrategyKind::ddp}) {
    const Trained run = train(strategy, 2, set);
    const double end_ulps = parallel::max_ulps(run.params, single.params);
    std::cout << strategy << " on 2 devices: last loss " << run.last_loss << ", worst step " << run.worst_ulps
              << " ulps from single-device training's, parameters at the end " << end_ulps << " ulps apart\n";
    // Per step within a few ulps; over the whole run the roundings add up, but stay small.
    if (run.worst_ulps > kMaxUlps || end_ulps > kMaxEndUlps) {
      std::cerr << strategy << " did not train single-device training's steps\n";
      ++failures;
    }
  }

  parallel::ExperimentConfig config{.batch_size = 37, .steps = 20, .warmup = 2, .make_optimizer = make_sgd};
  config.make_model = [] { return std::make_shared<Regressor>(); };
  config.loss_fn = mse;
  parallel::Experiment experiment(config, set);
  for (const auto& [strategy, devices] : {std::pair{parallel::StrategyKind::single, 1},
                                          {parallel::StrategyKind::dp, 2},
                                          {parallel::StrategyKind::ddp, 2}}) {
    const parallel::RunMeasurement m = experiment.run({strategy, devices});
    std::cout << "experiment " << strategy << ": " << m.images_per_second << " rows/s, final loss " << m.final_loss
              << ", worst step " << m.max_check_ulps.value_or(-1) << " ulps\n";
    if (!m.max_check_ulps || *m.max_check_ulps > kMaxUlps || m.replica_divergence) {
      std::cerr << "experiment: " << strategy << " failed its per-step check"
                << (m.replica_divergence ? ": " + *m.replica_divergence : std::string()) << "\n";
      ++failures;
    }
  }
  if (failures == 0) std::cout << "all strategies trained single-device training's steps\n";
  return failures == 0 ? 0 : 1;
}

int main() {
  try {
    return run();
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
