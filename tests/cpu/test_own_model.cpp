// A model, loss and targets of the user's own under every strategy: an MSE loss on f32
// regression targets and a multi-label loss train single-device training's step under dp and
// the ddp variants (the per-step check, step_check.h), unequal shards included; learning-rate
// schedules reach every replica; an Experiment compares a model it does not know by name.
#include <catch2/catch.hpp>

#include <random>

#include "duet/duet.h"
#include "duet/parallel/lab/experiment.h"
#include "duet/parallel/lab/step_check.h"
#include "strategy_fixtures.h"

using namespace duet;
using namespace duet::parallel;

namespace {

constexpr int64_t kFeatures = 6;

// A two-layer regression net: kFeatures inputs, `outputs` outputs.
std::shared_ptr<nn::Module> regression_net(int64_t outputs = 1) {
  return nn::Sequential(nn::Linear(kFeatures, 16), nn::Tanh(), nn::Linear(16, outputs)).ptr();
}

std::shared_ptr<nn::Module> seeded_net(int64_t outputs = 1) {
  manual_seed(11);
  return regression_net(outputs);
}

// Rows of random features and f32 targets [rows, outputs]: a smooth function of the features
// plus noise for regression, or 0/1 labels for multi-label.
data::Batch regression_batch(int64_t rows, uint64_t seed, int64_t outputs = 1, bool binary = false) {
  std::mt19937 rng(static_cast<unsigned>(seed));
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<size_t>(rows * kFeatures)), y(static_cast<size_t>(rows * outputs));
  for (float& v : x) v = normal(rng);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < outputs; ++k) {
      const float value = x[static_cast<size_t>(r * kFeatures + k % kFeatures)] - 0.5f * x[r * kFeatures + 1];
      y[static_cast<size_t>(r * outputs + k)] = binary ? (value > 0 ? 1.0f : 0.0f) : value + 0.1f * normal(rng);
    }
  }
  return {from_vector(x, {rows, kFeatures}), from_vector(y, {rows, outputs})};
}

// 12 rows split 6 + 6 over 2 devices, 7 rows 4 + 3, 9 rows 5 + 4 (3 + 3 + 3 over 3), 5 rows
// 2 + 2 + 1 over 3.
std::vector<data::Batch> regression_batches(int64_t outputs = 1, bool binary = false) {
  std::vector<data::Batch> batches;
  const int64_t rows[] = {12, 7, 9, 5, 12, 7};
  for (uint64_t i = 0; i < 6; ++i) batches.push_back(regression_batch(rows[i], 40 + i, outputs, binary));
  return batches;
}

Tensor mse(const Tensor& output, const Tensor& target) { return nn::functional::mse_loss(output, target); }

// Binary cross-entropy on logits, mean over every label of every row: log(1 + e^x) - x y,
// written stably as relu(x) - x y + log(1 + e^-|x|).
Tensor multi_label_bce(const Tensor& logits, const Tensor& target) {
  return mean(relu(logits) - logits * target + log(exp(-abs(logits)) + 1.0));
}

// Trains `name` on `devices` devices over `batches`, checking every step against single-device
// training's; returns the worst step's distance in float ulps.
double worst_step_ulps(StrategyKind name, int devices, const LossFn& loss_fn, const std::vector<data::Batch>& batches,
                       int64_t outputs = 1) {
  StrategyOptions options;
  options.loss_fn = loss_fn;
  std::unique_ptr<Strategy> strategy =
      make_strategy(name, seeded_net(outputs), test::sgd, test::cpus(devices), options);
  StepCheck check(regression_net(outputs), test::sgd, cpu(devices), loss_fn);
  double worst = 0;
  for (const data::Batch& batch : batches) {
    check.before(*strategy, batch);
    const StepResult r = strategy->train_step(batch);
    CHECK(r.count == batch.y.size(0));
    CHECK_FALSE(r.correct.has_value());  // f32 targets: no correct count
    CHECK(std::isfinite(r.loss));
    worst = std::max(worst, check.after(*strategy));
  }
  return worst;
}

}  // namespace

TEST_CASE("an MSE loss on f32 [N, 1] targets: dp and every ddp give single-device training's step",
          "[own_model][strategies]") {
  const std::vector<data::Batch> batches = regression_batches();
  CHECK(worst_step_ulps(StrategyKind::single, 1, mse, batches) == 0);
  for (const StrategyKind name :
       {StrategyKind::dp, StrategyKind::ddp, StrategyKind::ddp_unbucketed, StrategyKind::ddp_naive}) {
    for (int devices : {2, 3}) {
      INFO(name << " on " << devices << " devices");
      CHECK(worst_step_ulps(name, devices, mse, batches) <= 8);
    }
  }
}

TEST_CASE("the per-step check sees a wrongly weighted custom loss on unequal shards", "[own_model][strategies]") {
  // PyTorch DDP's mean of the ranks' means over-weights the smaller shard: for 7 rows over 2
  // devices (4 + 3) it is not single-device training's step, with MSE as with cross-entropy.
  StrategyOptions options;
  options.loss_fn = mse;
  options.ddp.mean_of_means = true;
  auto ddp = make_strategy(StrategyKind::ddp, seeded_net(), test::sgd, test::cpus(2), options);
  StepCheck check(regression_net(), test::sgd, cpu(2), mse);
  const data::Batch batch = regression_batch(7, 3);
  check.before(*ddp, batch);
  ddp->train_step(batch);
  CHECK(check.after(*ddp) > 1000);
}

TEST_CASE("a multi-label loss on 0/1 f32 targets [N, 3] trains the same step under dp and ddp",
          "[own_model][strategies]") {
  const std::vector<data::Batch> batches = regression_batches(3, true);
  for (const StrategyKind name : {StrategyKind::dp, StrategyKind::ddp}) {
    INFO(name);
    CHECK(worst_step_ulps(name, 2, multi_label_bce, batches, 3) <= 8);
  }
}

TEST_CASE("StepResult counts correct predictions only for class labels", "[own_model][strategies]") {
  // A loss of one's own on i64 labels: the argmax count still means something.
  const LossFn smoothed = [](const Tensor& logits, const Tensor& labels) {
    return nn::functional::cross_entropy(logits, labels, {.label_smoothing = 0.1});
  };
  const data::Batch labelled = test::random_batch(7, 5);
  for (const StrategyKind name : {StrategyKind::single, StrategyKind::dp, StrategyKind::ddp}) {
    INFO(name);
    StrategyOptions options;
    options.loss_fn = smoothed;
    auto classifier = make_strategy(name, test::fresh("mlp"), test::sgd, test::cpus(2), options);
    const StepResult r = classifier->train_step(labelled);
    CHECK(r.count == 7);
    REQUIRE(r.correct.has_value());
    CHECK(*r.correct >= 0);
    CHECK(*r.correct <= 7);
  }
}

TEST_CASE("a sum reduction with a loss_fn sums its mean over the rows", "[own_model][strategies]") {
  const std::vector<data::Batch> batches = regression_batches();
  auto trained_with = [&](StrategyKind name, LossReduction reduction) {
    StrategyOptions options;
    options.loss_fn = mse;
    options.loss = reduction;
    auto strategy = make_strategy(name, seeded_net(), test::sgd, test::cpus(2), options);
    return test::trained(*strategy, batches);
  };
  // Six steps of a summed loss are large ones, which amplify roundings; a mean instead of the
  // sum lands a hundred times further.
  const test::Params single = trained_with(StrategyKind::single, LossReduction::sum);
  CHECK(test::max_relative_diff(trained_with(StrategyKind::dp, LossReduction::sum), single) < 1e-4);
  CHECK(test::max_relative_diff(trained_with(StrategyKind::ddp, LossReduction::sum), single) < 1e-4);
  CHECK(test::max_relative_diff(trained_with(StrategyKind::single, LossReduction::mean), single) > 1e-2);
}

TEST_CASE("set_lr reaches every replica's optimizer", "[own_model][schedule]") {
  for (const StrategyKind name : {StrategyKind::single, StrategyKind::dp, StrategyKind::ddp}) {
    INFO(name);
    auto strategy = make_strategy(name, seeded_net(), test::sgd, test::cpus(2));
    strategy->set_lr(0.025);
    CHECK(strategy->optimizer().lr() == 0.025);
    if (auto* ddp = dynamic_cast<DistributedDataParallel*>(strategy.get())) {
      REQUIRE(ddp->local_ranks() == 2);
      CHECK(ddp->replica_optimizer(1).lr() == 0.025);
    }
  }
}

TEST_CASE("a step schedule applied through set_lr keeps every strategy on single-device training's steps",
          "[own_model][schedule]") {
  const std::vector<data::Batch> batches = regression_batches();
  const optim::StepLR schedule(2, 0.5);  // halves the lr every 2 steps
  for (const StrategyKind name : {StrategyKind::single, StrategyKind::dp, StrategyKind::ddp}) {
    INFO(name);
    StrategyOptions options;
    options.loss_fn = mse;
    auto strategy = make_strategy(name, seeded_net(), test::sgd, test::cpus(2), options);
    StepCheck check(regression_net(), test::sgd, cpu(2), mse);
    double worst = 0;
    for (size_t step = 0; step < batches.size(); ++step) {
      const double lr = schedule.apply(*strategy, 0.1, static_cast<int64_t>(step));
      CHECK(strategy->optimizer().lr() == lr);
      check.before(*strategy, batches[step]);
      strategy->train_step(batches[step]);
      worst = std::max(worst, check.after(*strategy));
    }
    CHECK(worst <= 8);
    CHECK(strategy->optimizer().lr() == 0.1 * 0.25);
    if (auto* ddp = dynamic_cast<DistributedDataParallel*>(strategy.get())) {
      CHECK(ddp->replica_optimizer(1).lr() == 0.1 * 0.25);
      CHECK(ddp->replica_divergence().empty());  // rank 1 followed the schedule too
    }
  }
}

TEST_CASE("an optimizer is Schedulable too", "[own_model][schedule]") {
  auto net = seeded_net();
  optim::SGD sgd(net->parameters(), {.lr = 1.0});
  const optim::CosineLR cosine(10);
  CHECK(cosine.apply(sgd, 1.0, 5) == Approx(0.5));
  CHECK(sgd.lr() == Approx(0.5));
}

TEST_CASE("Experiment runs, checks and measures a model of one's own with its own loss and data",
          "[own_model][experiment]") {
  // 40 rows of regression data, the same for every run.
  const data::Batch all = regression_batch(40, 9);
  ExperimentConfig config{.batch_size = 16,
                          .steps = 3,  // 16 + 16 + 8 rows an epoch: an unequal last batch, then a new epoch
                          .warmup = 1,
                          .make_optimizer = test::sgd};
  config.make_model = [] { return regression_net(); };
  config.loss_fn = mse;
  Experiment experiment(config, {all.x, all.y});
  const RunMeasurement single = experiment.run({StrategyKind::single, 1});
  CHECK(single.max_check_ulps == 0.0);
  CHECK(std::isfinite(single.final_loss));
  for (const StrategyKind name : {StrategyKind::dp, StrategyKind::ddp}) {
    INFO(name);
    const RunMeasurement m = experiment.run({name, 2});
    REQUIRE(m.max_check_ulps.has_value());
    CHECK(*m.max_check_ulps <= 8);
    CHECK_FALSE(m.replica_divergence.has_value());
    REQUIRE(m.max_param_diff.has_value());
    CHECK(*m.max_param_diff < 1e-5);
  }
  // The cost model's sizes come from this model: one f32 output per example.
  CHECK(experiment.profile().output_bytes == 16 * 4);
}

TEST_CASE("the DataLoader batches f32 targets [N, K] row by row, shuffled with their inputs", "[own_model][data]") {
  // Input row i is i; target row i is (i, -i).
  std::vector<float> inputs, targets;
  for (int i = 0; i < 10; ++i) {
    inputs.push_back(static_cast<float>(i));
    targets.push_back(static_cast<float>(i));
    targets.push_back(static_cast<float>(-i));
  }
  data::DataLoader loader({from_vector(inputs, {10, 1}), from_vector(targets, {10, 2}).to(DType::f64)},
                          {.batch_size = 4, .shuffle = true, .seed = 3});
  int64_t rows = 0;
  for (auto& [x, y] : loader) {
    REQUIRE(y.dtype() == DType::f32);  // f64 targets are batched as f32, as inputs are
    REQUIRE(y.dim() == 2);
    REQUIRE(y.size(1) == 2);
    const std::vector<float> xs = x.to_vector<float>(), ys = y.to_vector<float>();
    for (size_t r = 0; r < xs.size(); ++r) {
      CHECK(ys[2 * r] == xs[r]);
      CHECK(ys[2 * r + 1] == -xs[r]);
    }
    rows += y.size(0);
  }
  CHECK(rows == 10);
  // scatter splits targets as it splits inputs: along dim 0, whatever their dtype and shape.
  const std::vector<Tensor> shards = scatter(from_vector(targets, {10, 2}), test::cpus(3));
  REQUIRE(shards.size() == 3);
  CHECK(shards[0].sizes() == Shape{4, 2});  // chunks of ceil(10 / 3) rows, as torch.chunk
  CHECK(shards[2].sizes() == Shape{2, 2});
  CHECK(shards[2].device() == cpu(2));
}
