// The step-overhead probe: what a strategy's step costs beyond the event simulation, measured on
// steps of almost no compute and added to the predicted step.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "duet/duet.h"
#include "duet/parallel/lab/step_overhead.h"

using namespace duet;
using namespace duet::parallel;
using Catch::Matchers::Contains;

namespace {

data::TensorDataset random_images(int64_t n = 16) {
  std::mt19937 rng(7);
  std::vector<uint8_t> pixels(static_cast<size_t>(n * 28 * 28));
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (uint8_t& p : pixels) p = static_cast<uint8_t>(rng() % 256);
  for (int64_t& l : labels) l = static_cast<int64_t>(rng() % 10);
  return {from_vector(pixels, {n, 1, 28, 28}), from_vector(labels, {n})};
}

}  // namespace

TEST_CASE("typical_mean leaves out the values over 10 times the median", "[cost-model]") {
  CHECK(typical_mean({2}) == 2);
  CHECK(typical_mean({1, 2, 3}) == 2);
  // The median is 1: 10 stays (it is not over 10 times it), 500 goes.
  CHECK(typical_mean({1, 1, 1, 10, 500}) == Approx(13.0 / 4));
  REQUIRE_THROWS_WITH(typical_mean({}), Contains("no values"));
}

TEST_CASE("predict_step adds the measured step overhead of that strategy on that many devices", "[cost-model]") {
  StepProfile p;
  p.forward_ms = 4, p.loss_ms = 0, p.backward_ms = 20, p.step_ms = 1;
  p.batch_size = 8;
  p.input_bytes = 8 * 100, p.output_bytes = 8 * 40;
  p.parameter_sizes = {1000};
  p.parameter_bytes = 1000;
  p.grad_ready_ms = {20};
  p.arrival_buckets = {{0}};
  Links links;
  links.link = links.copy = links.reduce_add = {0, 0};
  links.all_reduce[1] = links.all_reduce[2] = {0, 0};
  const double ddp_ms = predict_step(StrategyKind::ddp, 2, 8, p, links).step_ms;
  const double dp_ms = predict_step(StrategyKind::dp, 2, 8, p, links).step_ms;
  links.step_overhead_ms[{StrategyKind::ddp, 2}] = 0.5;
  links.step_overhead_ms[{StrategyKind::dp, 1}] = 0.25;
  CHECK(predict_step(StrategyKind::ddp, 2, 8, p, links).step_ms == Approx(ddp_ms + 0.5));
  // Another strategy, or the same on another device count, keeps its own (none here).
  CHECK(predict_step(StrategyKind::dp, 2, 8, p, links).step_ms == Approx(dp_ms));
  CHECK(predict_step(StrategyKind::single, 1, 8, p, links).step_ms == 25);
}

TEST_CASE("measure_step_overhead runs each strategy once per device count and simulates it", "[cost-model]") {
  ExperimentConfig config{.model = "mlp", .make_optimizer = [](std::vector<Tensor> params) {
                            return std::make_unique<optim::SGD>(std::move(params), optim::SGDOptions{.lr = 0.1});
                          }};
  Links links;
  links.link = links.copy = links.reduce_add = links.memory_copy = {0.01, 1e-7};
  links.all_reduce[1] = links.all_reduce[2] = {0.02, 2e-7};
  links.collectives_use_compute = true;
  const std::vector<StrategyRun> runs = {
      {StrategyKind::single, 1}, {StrategyKind::dp, 2}, {StrategyKind::ddp, 2}, {StrategyKind::ddp, 2}};
  const std::vector<StepOverhead> overhead = measure_step_overhead(
      config, random_images(), runs, links, {.rows_per_device = 2, .min_steps = 3, .max_steps = 3, .warmup = 1});
  REQUIRE(overhead.size() == 2);  // single is the reference; ddp on 2 once
  CHECK(overhead[0].strategy == StrategyKind::dp);
  CHECK(overhead[1].strategy == StrategyKind::ddp);
  for (const StepOverhead& o : overhead) {
    INFO(o.strategy);
    CHECK(o.devices == 2);
    CHECK(o.measured_ms > 0);
    CHECK(std::isfinite(o.simulated_ms));
    CHECK(std::isfinite(o.ms()));
    CHECK(o.ms() == o.measured_ms - o.simulated_ms);
  }
  // Where single's step at the probe's batch is long enough for the overhead to vanish in its
  // noise (here: any step at all), there is no probe.
  CHECK(measure_step_overhead(config, random_images(), runs, links,
                              {.min_steps = 3, .max_steps = 3, .warmup = 1, .negligible_above_ms = 0})
            .empty());
}
