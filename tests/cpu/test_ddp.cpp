// What DDP users expect from strategy B beyond plain equivalence (test_strategies.cpp): unused
// parameters, BatchNorm and SyncBatchNorm, gradient accumulation (no_sync), the buckets'
// rebuild after the first step, broadcast_buffers, and the communication track.
#include <catch2/catch.hpp>

#include <thread>

#include "duet/duet.h"
#include "duet/parallel/broadcast_coalesced.h"
#include "duet/parallel/replica_threads.h"
#include "strategy_fixtures.h"

using namespace duet;
using namespace duet::parallel;
using Catch::Matchers::Contains;

namespace {

using namespace duet::test;

// A linear model with a second branch that forward uses only for batches of at least
// `min_rows` rows (never, by default): an unused parameter, or one only some ranks use.
class BranchImpl final : public nn::Cloneable<BranchImpl> {
 public:
  explicit BranchImpl(int64_t min_rows = INT64_MAX) : min_rows_(min_rows) {
    used_ = register_module("used", nn::Linear(16, 10));
    branch_ = register_module("branch", nn::Linear(16, 10));
  }
  Tensor forward(const Tensor& x) override {
    Tensor flat = x.flatten(1);
    Tensor out = used_(flat);
    return x.size(0) >= min_rows_ ? out + branch_(flat) : out;
  }
  std::string name() const override { return "Branch"; }

 private:
  int64_t min_rows_;
  nn::Child<nn::Linear> used_, branch_;
};

// Registered in the opposite order of use: backward produces `late`'s gradients first, which
// reverse registration order puts last.
class ReorderedImpl final : public nn::Cloneable<ReorderedImpl> {
 public:
  Tensor forward(const Tensor& x) override { return late_(relu(early_(x.flatten(1)))); }
  std::string name() const override { return "Reordered"; }

 private:
  // Registered in declaration order.
  nn::Child<nn::Linear> late_ = register_module("late", nn::Linear(12, 10));
  nn::Child<nn::Linear> early_ = register_module("early", nn::Linear(16, 12));
};

std::shared_ptr<nn::Module> seeded(const std::function<std::shared_ptr<nn::Module>()>& make) {
  manual_seed(11);
  return make();
}

Params values(const nn::NamedTensors& tensors) {
  Params out;
  for (const auto& [name, t] : tensors) out.emplace_back(name, t.to_vector<double>());
  return out;
}

OptimizerFactory sgd_with(double momentum, double weight_decay) {
  return [=](std::vector<Tensor> params) {
    return std::make_unique<optim::SGD>(
        std::move(params), optim::SGDOptions{.lr = 0.1, .momentum = momentum, .weight_decay = weight_decay});
  };
}

}  // namespace

TEST_CASE("DDP leaves a parameter no rank used without a gradient, as single and dp do", "[ddp]") {
  // Weight decay and momentum would move a parameter with a zero gradient: it must have none.
  const OptimizerFactory make = sgd_with(0.9, 0.1);
  auto fresh_branch = [] { return seeded([] { return std::make_shared<BranchImpl>(); }); };
  std::vector<data::Batch> batches;
  for (uint64_t i = 0; i < 5; ++i) batches.push_back(random_batch(7 + static_cast<int64_t>(i), 40 + i, {1, 4, 4}));

  std::shared_ptr<nn::Module> initial = fresh_branch();
  const Params start = values(initial->named_parameters());
  std::shared_ptr<nn::Module> single_model = fresh_branch();
  SingleDevice single(single_model, make(single_model->parameters()), cpu(0));
  const Params expected = trained(single, batches);
  CHECK(expected[2] == start[2]);  // branch.weight: single-device training never moves it
  CHECK(expected[3] == start[3]);

  std::shared_ptr<nn::Module> dp_model = fresh_branch();
  DataParallel dp(dp_model, make(dp_model->parameters()), cpus(2));
  const Params dp_params = trained(dp, batches);
  CHECK(max_relative_diff(dp_params, expected) < 1e-5);
  CHECK(dp_params[2] == start[2]);
  for (int n : {2, 3}) {
    struct Mode {
      const char* name;
      bool bucketed, sharded;
    };
    // zero1 too: the pieces of a parameter that no rank used get no gradient, and no step.
    for (const Mode mode :
         {Mode{"bucketed", true, false}, Mode{"unbucketed", false, false}, Mode{"zero1", true, true}}) {
      INFO(n << " devices, " << mode.name);
      DDPOptions options = tiny_buckets();
      options.bucketed = mode.bucketed;
      options.shard_optimizer = mode.sharded;
      DistributedDataParallel ddp(fresh_branch(), make, cpus(n), options);
      const Params got = trained(ddp, batches);
      CHECK(max_relative_diff(got, expected) < 1e-5);
      CHECK(got[2] == start[2]);
      CHECK(got[3] == start[3]);
      for (size_t r = 0; r < static_cast<size_t>(n); ++r) {
        CHECK_FALSE(ddp.replica(r).parameters()[2].grad().defined());
        CHECK(ddp.replica(r).parameters()[0].grad().defined());
      }
    }
  }
}

TEST_CASE("DDP gives a parameter that only some ranks used the others' reduced gradient", "[ddp]") {
  // 7 rows over 2 ranks: 4 + 3. Only rank 0's batch is large enough for the branch.
  for (bool bucketed : {true, false}) {
    DDPOptions options = tiny_buckets();
    options.bucketed = bucketed;
    DistributedDataParallel ddp(seeded([] { return std::make_shared<BranchImpl>(4); }), sgd, cpus(2), options);
    ddp.train_step(random_batch(7, 50, {1, 4, 4}));
    Tensor g0 = ddp.replica(0).parameters()[2].grad(), g1 = ddp.replica(1).parameters()[2].grad();
    REQUIRE(g0.defined());
    REQUIRE(g1.defined());
    CHECK(g0.to_vector<float>() == g1.to_vector<float>());
    CHECK(sum(abs(g0)).item<double>() > 0);
  }
}

TEST_CASE("DDP with BatchNorm: rank 0's buffers are DataParallel's, dp = ddp, and neither is single", "[ddp]") {
  const std::vector<data::Batch> batches = batches_8x8();
  std::shared_ptr<nn::Module> single_model = batch_norm_model();
  SingleDevice single(single_model, sgd(single_model->parameters()), cpu(0));
  const Params single_params = trained(single, batches);
  for (int n : {2, 3}) {
    INFO(n << " devices");
    std::shared_ptr<nn::Module> dp_model = batch_norm_model();
    DataParallel dp(dp_model, sgd(dp_model->parameters()), cpus(n));
    const Params dp_params = trained(dp, batches);
    DistributedDataParallel ddp(batch_norm_model(), sgd, cpus(n), tiny_buckets());
    const Params ddp_params = trained(ddp, batches);
    CHECK(max_relative_diff(ddp_params, dp_params) < 1e-5);
    // Both keep the statistics of device 0's shards: DataParallel's replica 0 updates the
    // master's buffers, and DDP's broadcast_buffers hands rank 0's to every rank before each
    // forward (which then updates them from its own shard).
    CHECK(max_relative_diff(values(ddp.model().named_buffers()), values(dp_model->named_buffers())) < 1e-5);
    // Every shard normalised with its own statistics: not single-device training.
    CHECK(max_relative_diff(ddp_params, single_params) > 1e-4);
  }
}

TEST_CASE("DDP with SyncBatchNorm equals single-device training with BatchNorm", "[ddp][syncbn]") {
  const std::vector<data::Batch> batches = batches_8x8();
  std::shared_ptr<nn::Module> single_model = batch_norm_model();
  SingleDevice single(single_model, sgd(single_model->parameters()), cpu(0));
  const Params expected = trained(single, batches);
  const Params expected_buffers = values(single_model->named_buffers());
  for (int n : {2, 3}) {
    for (bool bucketed : {true, false}) {
      INFO(n << " devices, " << (bucketed ? "bucketed" : "unbucketed"));
      DDPOptions options = tiny_buckets();
      options.bucketed = bucketed;
      options.sync_batchnorm = true;
      DistributedDataParallel ddp(batch_norm_model(), sgd, cpus(n), options);
      CHECK_THAT(ddp.model().str(), Contains("SyncBatchNorm2d(3"));
      const Params got = trained(ddp, batches);
      CHECK(max_relative_diff(got, expected) < 1e-5);
      // The running statistics are the global batch's (unbiased variance), on every rank.
      for (size_t r = 0; r < static_cast<size_t>(n); ++r) {
        INFO("rank " << r);
        CHECK(max_relative_diff(values(ddp.replica(r).named_buffers()), expected_buffers) < 1e-5);
      }
    }
  }
  SECTION("every rank needs an example") {
    DDPOptions options{.sync_batchnorm = true};
    DistributedDataParallel ddp(batch_norm_model(), sgd, cpus(3), options);
    CHECK_THROWS_WITH(ddp.train_step(random_batch(2, 1, {1, 8, 8})),
                      Contains("SyncBatchNorm needs an example on every rank") && Contains("cpu:2"));
  }
}

TEST_CASE("SyncBatchNorm with momentum None keeps single-device BatchNorm's cumulative average", "[ddp][syncbn]") {
  const nn::BatchNormOptions cumulative{.momentum = std::nullopt};
  const std::vector<data::Batch> batches = batches_8x8();
  std::shared_ptr<nn::Module> single_model = batch_norm_model(cpu(0), cumulative);
  SingleDevice single(single_model, sgd(single_model->parameters()), cpu(0));
  const Params expected = trained(single, batches);
  DDPOptions options = tiny_buckets();
  options.sync_batchnorm = true;
  DistributedDataParallel ddp(batch_norm_model(cpu(0), cumulative), sgd, cpus(2), options);
  CHECK_THAT(ddp.model().str(), Contains("SyncBatchNorm2d(3, eps=1e-05, momentum=None"));
  CHECK(max_relative_diff(trained(ddp, batches), expected) < 1e-5);
  CHECK(max_relative_diff(values(ddp.model().named_buffers()), values(single_model->named_buffers())) < 1e-5);
}

TEST_CASE("DDP with SyncBatchNorm in f64 equals single-device training to 1e-10 on a residual model", "[ddp][syncbn]") {
  // In f32 a residual BatchNorm network's step is ill-conditioned at small batches: single-device
  // training's own step moves by 1e-2 relative between f32 and f64 (docs/parallel-strategies.md),
  // so f32 cannot tell SyncBatchNorm's roundings from a mistake. f64 can.
  auto residual_f64 = [] {
    manual_seed(9);
    std::shared_ptr<nn::Module> m =
        nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 8, 3).padding(1)), nn::BatchNorm2d(8), nn::ReLU(),
                       nn::Residual(8, 8), nn::Residual(8, 16, true, 2), nn::AdaptiveAvgPool2d(1), nn::Flatten(),
                       nn::Linear(16, 10))
            .ptr();
    std::vector<Tensor> params, buffers;
    for (const Tensor& p : m->parameters()) params.push_back(p.detach().to(DType::f64).requires_grad_());
    for (const auto& [name, b] : m->named_buffers())
      buffers.push_back(b.dtype() == DType::f32 ? b.to(DType::f64) : b.clone());
    return m->replicate(params, buffers);
  };
  std::vector<data::Batch> batches;
  for (const data::Batch& b : batches_8x8()) batches.push_back({b.x.to(DType::f64), b.y});
  std::shared_ptr<nn::Module> single_model = residual_f64();
  SingleDevice single(single_model, sgd(single_model->parameters()), cpu(0));
  const Params expected = trained(single, batches);
  for (int n : {2, 3}) {
    INFO(n << " devices");
    DDPOptions options = tiny_buckets();
    options.sync_batchnorm = true;
    DistributedDataParallel ddp(residual_f64(), sgd, cpus(n), options);
    CHECK(max_relative_diff(trained(ddp, batches), expected) < 1e-10);
    CHECK(max_relative_diff(values(ddp.model().named_buffers()), values(single_model->named_buffers())) < 1e-10);
  }
}

namespace {

// sync_batch_norm of in = {x, weight, bias} over two ranks of `group`: the first `first_rows`
// rows on cpu:0, the rest on cpu:1, each rank's forward on its own thread (the all-reduce needs
// both), the outputs joined on cpu:0. Backward runs rank 1's node on cpu:1's engine thread,
// concurrently with rank 0's, which its all-reduce also needs.
Tensor sync_batch_norm_on_two_ranks(const std::vector<std::shared_ptr<Communicator>>& group,
                                    const std::vector<Tensor>& in, int64_t first_rows) {
  const Tensor& x = in[0];
  std::vector<Tensor> xs = {x.narrow(0, 0, first_rows), x.narrow(0, first_rows, x.size(0) - first_rows).to(cpu(1))};
  std::vector<Tensor> ws = {in[1], in[1].to(cpu(1))}, bs = {in[2], in[2].to(cpu(1))};
  std::vector<Tensor> out(2);
  run_on_devices(cpus(2),
                 [&](size_t r) { out[r] = sync_batch_norm(xs[r], ws[r], bs[r], {}, {}, 0.1, 1e-5, group[r]); });
  return cat({out[0], out[1].to(cpu(0))}, 0);
}

// The largest |a - b| over max(|b|) of two tensors' values.
double relative_distance(const Tensor& a, const Tensor& b) {
  const std::vector<double> av = a.to(DType::f64).to_vector<double>(), bv = b.to(DType::f64).to_vector<double>();
  double diff = 0, scale = 0;
  for (size_t i = 0; i < av.size(); ++i) {
    diff = std::max(diff, std::abs(av[i] - bv[i]));
    scale = std::max(scale, std::abs(bv[i]));
  }
  return diff / scale;
}

}  // namespace

// Both compute with kernels/batch_norm_math.h, so in f32 they differ only where the order of the
// double sums flips a rounding; before, f64 statistics against BatchNorm2d's f32 block sums moved
// the gradients of an offset input by far more.
TEST_CASE("sync_batch_norm over two ranks computes BatchNorm2d's f32 arithmetic, forward and backward",
          "[ddp][syncbn]") {
  std::vector<std::shared_ptr<Communicator>> group = make_local_group(cpus(2));
  Generator g(8);
  // Far from 0 and with a small spread, where f32 sums lose the most digits.
  const Tensor x0 = randn({6, 4, 9, 9}, {}, &g) * 0.05 + 3.0, w0 = rand({4}, {}, &g) + 0.5, b0 = randn({4}, {}, &g);
  const Tensor upstream = randn({6, 4, 9, 9}, {}, &g) + 1.0;
  std::vector<Tensor> sync_in = {x0.clone(), w0.clone(), b0.clone()}, plain_in = {x0.clone(), w0.clone(), b0.clone()};
  for (std::vector<Tensor>* in : {&sync_in, &plain_in})
    for (Tensor& t : *in) t.requires_grad_();
  const Tensor synced = sync_batch_norm_on_two_ranks(group, sync_in, 4);
  const Tensor plain = nn::functional::batch_norm(plain_in[0], plain_in[1], plain_in[2], {}, {}, true, 0.1, 1e-5);
  // Measured: 0 for the output and x's gradient; the weight's and bias's gradients are each
  // rank's, added in f32 on the way back, so about an ulp. The old arithmetic gave 1.5e-6 for
  // the output, 1.1e-6 for x's gradient and 2e-5 for the bias's.
  CHECK(relative_distance(synced, plain) < 1e-7);
  sum(synced * upstream).backward();
  sum(plain * upstream).backward();
  CHECK(relative_distance(sync_in[0].grad(), plain_in[0].grad()) < 1e-7);
  for (size_t i = 1; i < 3; ++i) {
    INFO("gradient " << i << " (weight, bias)");
    CHECK(relative_distance(sync_in[i].grad(), plain_in[i].grad()) < 5e-7);
  }
}

TEST_CASE("sync_batch_norm over two ranks: BatchNorm's values and an f64 gradcheck", "[ddp][syncbn][gradcheck]") {
  std::vector<std::shared_ptr<Communicator>> group = make_local_group(cpus(2));
  auto two_ranks = [&](const std::vector<Tensor>& in) { return sync_batch_norm_on_two_ranks(group, in, 4); };
  Generator g(5);
  TensorOptions f64{.dtype = DType::f64};
  Tensor x = (randn({6, 3, 2, 2}, f64, &g) * 2.0 + 1.0).requires_grad_();
  Tensor w = (rand({3}, f64, &g) + 0.5).requires_grad_();
  Tensor b = randn({3}, f64, &g).requires_grad_();

  Tensor plain = nn::functional::batch_norm(x, w, b, {}, {}, true, 0.1, 1e-5);
  std::vector<double> got = two_ranks({x, w, b}).to_vector<double>(), want = plain.to_vector<double>();
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).epsilon(1e-12).margin(1e-12));

  GradcheckResult result = gradcheck(two_ranks, {x, w, b});
  INFO(result.message);
  CHECK(result.ok);
}

TEST_CASE("gradient accumulation: K micro-batches equal one step on their concatenation", "[ddp][accumulate]") {
  // Three steps of three micro-batches of 5, 4 and 3 rows (3 rows over 3 devices: one each).
  std::vector<std::vector<data::Batch>> steps;
  std::vector<data::Batch> whole;
  for (uint64_t s = 0; s < 3; ++s) {
    std::vector<data::Batch> micro = {random_batch(5, 60 + 3 * s), random_batch(4, 61 + 3 * s),
                                      random_batch(3, 62 + 3 * s)};
    std::vector<Tensor> xs, ys;
    for (const data::Batch& b : micro) {
      xs.push_back(b.x);
      ys.push_back(b.y);
    }
    whole.push_back({cat(xs, 0), cat(ys, 0)});
    steps.push_back(std::move(micro));
  }
  auto accumulated = [&](Strategy& strategy) {
    for (const auto& micro : steps) strategy.train_accumulated(micro);
    return values(strategy.model().named_parameters());
  };
  for (LossReduction loss : {LossReduction::mean, LossReduction::sum}) {
    INFO((loss == LossReduction::mean ? "mean" : "sum") << " loss");
    const OptimizerFactory make = [loss](std::vector<Tensor> params) {
      return std::make_unique<optim::SGD>(
          std::move(params),
          optim::SGDOptions{.lr = loss == LossReduction::mean ? 0.1 : 0.01, .momentum = 0.9, .weight_decay = 0.01});
    };
    std::shared_ptr<nn::Module> reference_model = fresh("lenet-relu");
    SingleDevice reference(reference_model, make(reference_model->parameters()), cpu(0), loss);
    const Params expected = trained(reference, whole);

    std::shared_ptr<nn::Module> single_model = fresh("lenet-relu");
    SingleDevice single(single_model, make(single_model->parameters()), cpu(0), loss);
    CHECK(max_relative_diff(accumulated(single), expected) < 1e-5);
    for (int n : {2, 3}) {
      INFO(n << " devices");
      std::shared_ptr<nn::Module> dp_model = fresh("lenet-relu");
      DataParallel dp(dp_model, make(dp_model->parameters()), cpus(n), loss);
      CHECK(max_relative_diff(accumulated(dp), expected) < 1e-5);
      for (bool bucketed : {true, false}) {
        INFO((bucketed ? "bucketed" : "unbucketed"));
        DDPOptions options = tiny_buckets();
        options.bucketed = bucketed;
        options.loss = loss;
        DistributedDataParallel ddp(fresh("lenet-relu"), make, cpus(n), options);
        CHECK(max_relative_diff(accumulated(ddp), expected) < 1e-5);
        // no_sync: one gradient all-reduce per step, as many bytes as a step on one batch.
        ddp.train_step(whole[0]);
        const int64_t one_batch = ddp.last_phases().bytes_moved;
        ddp.train_accumulated(steps[0]);
        CHECK(ddp.last_phases().bytes_moved == one_batch);
      }
    }
  }
  SECTION("strategies without accumulation say so") {
    std::shared_ptr<nn::Module> model = fresh("mlp");
    // A strategy that only overrides train_step gets the default train_accumulated.
    WrappedSingle strategy(fresh("mlp"));
    CHECK_NOTHROW(strategy.train_accumulated({steps[0][0]}));
    CHECK_THROWS_WITH(strategy.train_accumulated(steps[0]), Contains("not 3 micro-batches"));
  }
}

TEST_CASE("DDP rebuilds its buckets once, in the order the gradients arrived", "[ddp]") {
  // One parameter per bucket (1-byte caps). Registration: late.weight 0, late.bias 1,
  // early.weight 2, early.bias 3; reverse order puts early's first, but backward reaches late's
  // gradients first.
  DDPOptions options{.first_bucket_mb = 1e-9, .bucket_cap_mb = 1e-9};
  DistributedDataParallel ddp(seeded([] { return std::make_shared<ReorderedImpl>(); }), sgd, cpus(2), options);
  auto layout_order = [&] {
    std::vector<size_t> order;
    for (const auto& bucket : ddp.buckets().buckets)
      for (const auto& entry : bucket.entries) order.push_back(entry.param);
    return order;
  };
  CHECK(layout_order() == std::vector<size_t>{3, 2, 1, 0});
  ddp.train_step(random_batch(6, 70, {1, 4, 4}));
  // In the first step bucket 0 (early.bias) was ready last, and the others waited for it.
  CHECK(ddp.launch_order(0) == std::vector<size_t>{0, 1, 2, 3});
  CHECK(ddp.ready_order(0).back() <= 1);
  const std::vector<size_t> rebuilt = layout_order();
  CHECK(rebuilt == ddp.grad_ready_order(0));
  CHECK((rebuilt[0] == 0 || rebuilt[0] == 1));
  CHECK(rebuilt[3] >= 2);
  // Now the buckets fill in order, and they stay as they are.
  ddp.train_step(random_batch(6, 71, {1, 4, 4}));
  CHECK(layout_order() == rebuilt);
  for (size_t r = 0; r < 2; ++r) CHECK(ddp.ready_order(r) == std::vector<size_t>{0, 1, 2, 3});
}

TEST_CASE("broadcast_buffers: one broadcast per dtype, and off leaves each rank its own", "[ddp]") {
  SECTION("broadcast_coalesced") {
    std::vector<std::shared_ptr<Communicator>> group = make_local_group(cpus(2));
    std::vector<std::vector<Tensor>> tensors(2);
    for (size_t r = 0; r < 2; ++r) {
      const double v = static_cast<double>(r + 1);
      tensors[r] = {full({3}, v, {.device = cpu(static_cast<int>(r))}),
                    full({2}, v, {.dtype = DType::i64, .device = cpu(static_cast<int>(r))}), Tensor(),
                    full({2, 2}, v, {.device = cpu(static_cast<int>(r))})};
    }
    run_on_devices(cpus(2), [&](size_t r) { broadcast_coalesced(*group[r], tensors[r], 0); });
    CHECK(group[1]->stats().calls == 2);  // f32 and i64
    CHECK(tensors[1][0].to_vector<float>() == std::vector<float>(3, 1.0f));
    CHECK(tensors[1][1].to_vector<int64_t>() == std::vector<int64_t>(2, 1));
    CHECK(tensors[1][3].to_vector<float>() == std::vector<float>(4, 1.0f));
  }
  SECTION("DDP") {
    for (bool broadcast : {true, false}) {
      INFO("broadcast_buffers " << broadcast);
      DDPOptions options{.broadcast_buffers = broadcast};
      DistributedDataParallel ddp(batch_norm_model(), sgd, cpus(2), options);
      ddp.train_step(random_batch(8, 80, {1, 8, 8}));
      {
        NoGradGuard no_grad;  // rank 1's statistics drift far from rank 0's
        ddp.replica(1).named_buffers()[0].second.fill_(100.0);
      }
      ddp.train_step(random_batch(8, 81, {1, 8, 8}));
      // Broadcast: rank 1 started the step from rank 0's statistics. Off: from its own, and
      // momentum 0.1 keeps 90% of the drift.
      const double mean = ddp.replica(1).named_buffers()[0].second.to_vector<double>()[0];
      if (broadcast) {
        CHECK(std::fabs(mean) < 10);
      } else {
        CHECK(mean > 80);
      }
    }
  }
}

TEST_CASE("DDP records every bucket's ready, launch and finish time per rank", "[ddp]") {
  DistributedDataParallel ddp(fresh("lenet-relu"), sgd, cpus(2), tiny_buckets());
  ddp.train_step(random_batch(8, 90));
  ddp.train_step(random_batch(8, 91));
  const PhaseTimes& phases = ddp.last_phases();
  const size_t buckets = ddp.buckets().buckets.size();
  REQUIRE(phases.comm_events.size() == 2 * (buckets + 1));  // and the unused-parameter map
  for (const CommEvent& e : phases.comm_events) {
    INFO(e.name << " on track " << e.track);
    CHECK(e.ready_us <= e.launch_us);
    CHECK(e.launch_us <= e.finish_us);
    CHECK(e.bytes > 0);
  }
  CHECK(phases.comm_events.front().name == "bucket 0");
  CHECK(phases.comm_events.back().name == "unused-parameter map");
  CHECK(phases.overlap.samples == 2);
  CHECK(phases.overlap.busy_ms > 0);
  CHECK(phases.overlap.exposed_ms <= phases.overlap.busy_ms);

  CHECK(phases.overlap.bytes > 0);
  CHECK(phases.overlap.hidden_bytes <= phases.overlap.bytes);

  // The overlap arithmetic: busy from max(launch, previous finish); exposed after backward
  // returned; hidden, the bytes done before the last gradient.
  std::vector<CommEvent> events = {{"a", 0, 0, 100, 300, 3}, {"b", 0, 150, 200, 500, 1}};
  CommOverlap o = overlap_of(events, 400, 450);
  CHECK(o.busy_ms == Approx(0.4));          // 100..300 and 300..500
  CHECK(o.exposed_ms == Approx(0.05));      // 450..500
  CHECK(o.hidden_share() == Approx(0.75));  // a's 3 bytes of 4
  // Had "a" waited 150 us for the last rank to launch it, "b" would have finished by 350.
  events[0].wait_for_last_launch_us = 150;
  CHECK(overlap_of(events, 400, 450).hidden_share() == Approx(1.0));
}

TEST_CASE("the overlap figure takes out the wait for the last rank to launch", "[ddp]") {
  // Rank 0 launches both collectives early; rank 1 launches the first 200 us later.
  std::vector<CommEvent> rank0 = {{"a", 0, 0, 100, 400, 1}, {"b", 0, 0, 150, 500, 1}};
  std::vector<CommEvent> rank1 = {{"a", 1, 0, 300, 400, 1}, {"b", 1, 0, 450, 500, 1}};
  set_launch_waits({&rank0, &rank1});
  CHECK(rank0[0].wait_for_last_launch_us == Approx(200));  // could start at 100, the last launch at 300
  CHECK(rank0[1].wait_for_last_launch_us == Approx(50));   // could start at 400, the last launch at 450
  CHECK(rank1[0].wait_for_last_launch_us == 0);
  CHECK(rank1[1].wait_for_last_launch_us == 0);
  // Rank 0's last gradient at 260: both would have finished by then (200 and 250) but for the waits.
  CHECK(overlap_of(rank0, 260, 260).hidden_share() == Approx(1.0));
  CHECK(overlap_of(rank0, 199, 260).hidden_share() == Approx(0.0));
}

TEST_CASE("Trainer groups the loader's batches into steps of K micro-batches", "[ddp][accumulate]") {
  // 10 batches of 5 rows, 3 per step: steps of 3, 3, 3 and the epoch's last, 1.
  Generator g(1);
  data::TensorDataset images{rand({50, 1, 28, 28}, {}, &g), from_vector(std::vector<int64_t>(50, 3), {50})};
  data::DataLoader train(images, {.batch_size = 5}), test(images, {.batch_size = 25});
  std::shared_ptr<nn::Module> model = fresh("mlp");
  SingleDevice strategy(model, sgd(model->parameters()), cpu(0));
  std::vector<StepProgress> seen;
  parallel::Trainer trainer(strategy, train, test, 3);
  trainer.fit(0, 1, {.on_step = [&](const StepProgress& p) { seen.push_back(p); }});
  REQUIRE(seen.size() == 4);
  CHECK(seen[0].steps == 4);
  CHECK(seen[0].images == 15);
  CHECK(seen[3].images == 50);
  CHECK_THROWS_WITH(parallel::Trainer(strategy, train, test, 0), Contains("at least 1 micro-batch"));
}
