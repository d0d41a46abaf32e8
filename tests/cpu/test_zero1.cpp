// zero1, ZeRO stage 1 (parallel/sharded_optimizer.h): the shards cover every parameter element
// once, every step lands within a few ulps of single-device training's (with gradient
// accumulation too), each rank keeps 1/N of the optimizer state, and that state gathers into
// the per-parameter form every other optimizer saves and loads.
#include <catch2/catch.hpp>

#include <random>

#include "duet/duet.h"
#include "duet/parallel/lab/experiment.h"
#include "duet/parallel/lab/step_check.h"
#include "duet/parallel/sharded_optimizer.h"
#include "strategy_fixtures.h"

using namespace duet;
using namespace duet::parallel;

namespace {

struct NamedOptimizer {
  const char* name;
  OptimizerFactory make;
  bool adam = false;  // divides by the gradient's scale (see the check below)
};

OptimizerFactory adam(double eps, bool decoupled) {
  return [eps, decoupled](std::vector<Tensor> params) -> std::unique_ptr<optim::Optimizer> {
    if (decoupled) {
      return std::make_unique<optim::AdamW>(std::move(params),
                                            optim::AdamOptions{.lr = 1e-2, .eps = eps, .weight_decay = 0.1});
    }
    return std::make_unique<optim::Adam>(std::move(params), optim::AdamOptions{.lr = 1e-2, .eps = eps});
  };
}

// The elementwise optimizers a sharded step must reproduce, each with state. `eps`: Adam's.
std::vector<NamedOptimizer> optimizers(double eps = 1e-8) {
  return {{"sgd momentum", test::sgd}, {"adam", adam(eps, false), true}, {"adamw", adam(eps, true), true}};
}

data::TensorDataset random_images(int64_t n) {
  std::mt19937 rng(5);
  std::vector<uint8_t> pixels(static_cast<size_t>(n * 28 * 28));
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (uint8_t& p : pixels) p = static_cast<uint8_t>(rng() % 256);
  for (int64_t& l : labels) l = static_cast<int64_t>(rng() % 10);
  return {from_vector(pixels, {n, 1, 28, 28}), from_vector(labels, {n})};
}

std::unique_ptr<Strategy> zero1(const OptimizerFactory& make_optimizer, int devices, const std::string& model = "mlp") {
  return make_strategy(StrategyKind::zero1, test::fresh(model), make_optimizer, test::cpus(devices),
                       {.ddp = test::tiny_buckets()});
}

std::map<std::string, Tensor> as_map(const nn::NamedTensors& tensors) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, t] : tensors) out.emplace(name, t.detach().clone());
  return out;
}

}  // namespace

TEST_CASE("zero1: the shards split every bucket evenly, each element to one rank, a tensor across ranks", "[zero1]") {
  // 5 + 3 + 4 elements in one bucket of 12.
  const std::vector<Tensor> params = {zeros({5}), zeros({3}), zeros({2, 2})};
  const BucketLayout layout = plan_buckets(params, 1 << 20, 1 << 20, {0, 1, 2});
  REQUIRE(layout.buckets.size() == 1);
  // Over 3 ranks, 4 elements each: parameter 0 spans ranks 0 and 1.
  const std::vector<ShardPiece> rank1 = shard_pieces(layout, 1, 3);
  REQUIRE(rank1.size() == 2);
  CHECK((rank1[0].param == 0 && rank1[0].param_offset == 4 && rank1[0].chunk_offset == 0 && rank1[0].numel == 1));
  CHECK((rank1[1].param == 1 && rank1[1].param_offset == 0 && rank1[1].chunk_offset == 1 && rank1[1].numel == 3));
  CHECK(bucket_chunk(12, 5) == 3);  // padded to 15: rank 4's chunk is all padding
  CHECK(shard_pieces(layout, 4, 5).empty());
  for (int world = 1; world <= 5; ++world) {
    INFO(world << " ranks");
    std::vector<std::vector<int>> covered = {std::vector<int>(5), std::vector<int>(3), std::vector<int>(4)};
    for (int r = 0; r < world; ++r) {
      for (const ShardPiece& piece : shard_pieces(layout, r, world)) {
        CHECK(piece.chunk_offset + piece.numel <= bucket_chunk(12, world));
        for (int64_t i = 0; i < piece.numel; ++i) ++covered[piece.param][piece.param_offset + i];
      }
    }
    for (const std::vector<int>& c : covered) CHECK(c == std::vector<int>(c.size(), 1));
  }
}

// Adam divides each gradient element by sqrt(v) + eps. Where a gradient element nearly cancels
// (terms of 1e-3 summing to 1e-9), the rounding of that sum, which depends on the order of the
// additions, reaches the parameter multiplied by up to lr / eps: 1e6 with eps 1e-8, far above 8
// ulps, for ddp exactly as for zero1, whose ranks add the shards' gradients in another order than
// single-device training's backward does. So with Adam's default eps the check asks zero1 to be
// no further from single-device training than ddp is; and with eps 1e-3 (lr / eps = 10), for
// 8 ulps.
TEST_CASE("zero1: every step within 8 ulps of single-device training's, on equal and unequal shards",
          "[zero1][experiment]") {
  for (const NamedOptimizer& optimizer : optimizers()) {
    ExperimentConfig config{
        .model = "mlp", .batch_size = 16, .steps = 3, .warmup = 1, .make_optimizer = optimizer.make};
    config.ddp = test::tiny_buckets();  // several buckets, and parameters across ranks
    Experiment experiment(config, random_images(40));
    for (int n : {2, 3}) {  // 16 rows: 8 + 8, and 6 + 5 + 5
      INFO(optimizer.name << " on " << n << " devices");
      const RunMeasurement m = experiment.run({StrategyKind::zero1, n});
      REQUIRE(m.max_check_ulps.has_value());
      CHECK(m.replicas_checked);
      CHECK_FALSE(m.replica_divergence);
      if (optimizer.adam) {
        CHECK(*m.max_check_ulps <= *experiment.run({StrategyKind::ddp, n}).max_check_ulps);
      } else {
        CHECK(*m.max_check_ulps <= 8);
      }
    }
  }
}

TEST_CASE("zero1: gradient accumulation steps as single-device training on the micro-batches", "[zero1]") {
  // Micro-batches of 7 and 5 rows: unequal shards over 2 and 3 devices.
  const std::vector<data::Batch> micro = {test::random_batch(7, 1), test::random_batch(5, 2)};
  for (const NamedOptimizer& optimizer : optimizers(1e-3)) {
    for (int n : {2, 3}) {
      INFO(optimizer.name << " on " << n << " devices");
      std::unique_ptr<Strategy> sharded = zero1(optimizer.make, n);
      std::shared_ptr<nn::Module> copy = test::fresh("mlp"), reordered = test::fresh("mlp");
      SingleDevice single(copy, optimizer.make(copy->parameters()), cpu(0));
      SingleDevice single_reordered(reordered, optimizer.make(reordered->parameters()), cpu(0));
      for (int step = 0; step < 3; ++step) {
        // From the same parameters and optimizer state, every step; and single-device training
        // on the micro-batches with their rows reversed, for the order of additions' own effect
        // (Adam's division by sqrt(v) + eps amplifies it: 12.75 ulps on one CPU, for ddp too).
        for (SingleDevice* s : {&single, &single_reordered}) {
          s->model().load_state_dict(as_map(sharded->model().state_dict()));
          s->optimizer().load_state(as_map(sharded->optimizer().state()));
        }
        single.train_accumulated(micro);
        single_reordered.train_accumulated({reversed_rows(micro[0]), reversed_rows(micro[1])});
        sharded->train_accumulated(micro);
        const double ulps = max_ulps(parameter_values(sharded->model()), parameter_values(*copy));
        const double order_ulps = max_ulps(parameter_values(*reordered), parameter_values(*copy));
        INFO("step " << step << ": " << ulps << " ulps, the order of additions " << order_ulps);
        CHECK(step_passes(ulps, order_ulps));
      }
    }
  }
}

TEST_CASE("zero1: on 2 devices, bit for bit ddp (a sum of two gradients has one rounding)", "[zero1]") {
  const std::vector<data::Batch> batches = test::five_batches();  // 12, 7, 12, 2 and 7 rows
  for (const NamedOptimizer& optimizer : optimizers()) {
    INFO(optimizer.name);
    auto ddp = make_strategy(StrategyKind::ddp, test::fresh("lenet-relu"), optimizer.make, test::cpus(2),
                             {.ddp = test::tiny_buckets()});
    auto sharded = zero1(optimizer.make, 2, "lenet-relu");
    CHECK(test::trained(*sharded, batches) == test::trained(*ddp, batches));
    ddp->train_accumulated({batches[0], batches[1]});
    sharded->train_accumulated({batches[0], batches[1]});
    CHECK(parameter_values(sharded->model()) == parameter_values(ddp->model()));
  }
}

TEST_CASE("zero1: each device keeps 1/N of ddp's optimizer state", "[zero1]") {
  const OptimizerFactory make_adam = optimizers()[1].make;  // exp_avg and exp_avg_sq per element
  const data::Batch batch = test::random_batch(12, 3);
  for (int n : {2, 3}) {
    INFO(n << " devices");
    auto ddp =
        make_strategy(StrategyKind::ddp, test::fresh("mlp"), make_adam, test::cpus(n), {.ddp = test::tiny_buckets()});
    auto sharded = zero1(make_adam, n);
    ddp->train_step(batch);
    sharded->train_step(batch);
    auto& ddp_ranks = dynamic_cast<DistributedDataParallel&>(*ddp);
    auto& zero1_ranks = dynamic_cast<DistributedDataParallel&>(*sharded);
    const int64_t whole = ddp_ranks.replica_optimizer(0).state_bytes();
    CHECK(whole == 2 * test::fresh("mlp")->num_parameters() * 4);  // exp_avg and exp_avg_sq, f32
    int64_t total = 0;
    for (int r = 0; r < n; ++r) {
      CHECK(ddp_ranks.replica_optimizer(r).state_bytes() == whole);
      const int64_t shard = zero1_ranks.replica_optimizer(r).state_bytes();
      // Up to the padding: each bucket pads fewer than n elements, of two f32 moments.
      const double padding = 2.0 * 4 * static_cast<double>(zero1_ranks.buckets().buckets.size()) * (n - 1);
      CHECK(std::abs(static_cast<double>(shard) - static_cast<double>(whole) / n) <= padding);
      total += shard;
    }
    CHECK(total == whole);  // every element's state on exactly one rank
  }
}

TEST_CASE("zero1: the gathered state is the per-parameter state single and ddp keep, and loads back", "[zero1]") {
  for (const NamedOptimizer& optimizer : optimizers()) {
    INFO(optimizer.name);
    const data::Batch batch = test::random_batch(12, 4);
    auto ddp = make_strategy(StrategyKind::ddp, test::fresh("mlp"), optimizer.make, test::cpus(3),
                             {.ddp = test::tiny_buckets()});
    auto sharded = zero1(optimizer.make, 3);
    for (int step = 0; step < 2; ++step) {
      ddp->train_step(batch);
      sharded->train_step(batch);
    }
    const std::map<std::string, Tensor> want = as_map(ddp->optimizer().state()),
                                        got = as_map(sharded->optimizer().state());
    REQUIRE(got.size() == want.size());
    for (const auto& [name, t] : want) {
      INFO(name);
      REQUIRE(got.count(name) == 1);
      CHECK(got.at(name).sizes() == t.sizes());
      CHECK(test::max_relative_diff({{name, got.at(name).to_vector<double>()}}, {{name, t.to_vector<double>()}}) <
            1e-5);
    }
    // Under single: the same tensors, bit for bit.
    std::shared_ptr<nn::Module> model = test::fresh("mlp");
    std::unique_ptr<optim::Optimizer> plain = optimizer.make(model->parameters());
    plain->load_state(got);
    const std::map<std::string, Tensor> reloaded = as_map(plain->state());
    CHECK(reloaded.size() == got.size());
    for (const auto& [name, t] : got) CHECK(reloaded.at(name).to_vector<double>() == t.to_vector<double>());
    // And back into zero1 on 2 devices, through the factory as a resumed run does.
    auto restored = make_strategy(StrategyKind::zero1, test::fresh("mlp"),
                                  [&](std::vector<Tensor> params) {
                                    std::unique_ptr<optim::Optimizer> o = optimizer.make(std::move(params));
                                    o->load_state(got);
                                    return o;
                                  },
                                  test::cpus(2), {.ddp = test::tiny_buckets()});
    const std::map<std::string, Tensor> again = as_map(restored->optimizer().state());
    CHECK(again.size() == got.size());
    for (const auto& [name, t] : got) CHECK(again.at(name).to_vector<double>() == t.to_vector<double>());
  }
}
