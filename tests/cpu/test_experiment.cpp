// The experiment runner behind `duet compare`, and the alpha-beta cost model it predicts with.
#include <catch2/catch.hpp>

#include <random>

#include "duet/duet.h"
#include "duet/parallel/lab/experiment.h"
#include "duet/parallel/lab/step_check.h"
#include "strategy_fixtures.h"

using namespace duet;
using namespace duet::parallel;
using Catch::Matchers::Contains;

namespace {

// 40 random 28x28 u8 images, as FashionMNIST loads them.
data::TensorDataset random_images(int64_t n = 40) {
  std::mt19937 rng(5);
  std::vector<uint8_t> pixels(static_cast<size_t>(n * 28 * 28));
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (uint8_t& p : pixels) p = static_cast<uint8_t>(rng() % 256);
  for (int64_t& l : labels) l = static_cast<int64_t>(rng() % 10);
  return {from_vector(pixels, {n, 1, 28, 28}), from_vector(labels, {n})};
}

ExperimentConfig small_config(const std::string& model) {
  return {.model = model,
          .batch_size = 16,
          .steps = 4,  // 40 images make 3 batches an epoch: the run crosses into a second epoch
          .warmup = 1,
          .make_optimizer = [](std::vector<Tensor> params) {
            return std::make_unique<optim::SGD>(std::move(params), optim::SGDOptions{.lr = 0.1});
          }};
}

}  // namespace

TEST_CASE("Experiment runs every strategy on the same batches and measures it", "[experiment]") {
  Experiment experiment(small_config("mlp"), random_images());
  RunMeasurement single = experiment.run({StrategyKind::single, 2});  // single ignores the device count
  CHECK(single.devices == 1);
  CHECK(single.max_param_diff == 0.0);
  CHECK(single.first_step_param_diff == 0.0);
  CHECK(single.steps == 4);
  CHECK(single.step_ms.size() == 4);  // each timed step's wall time
  CHECK(single.images_per_second > 0);
  CHECK(single.phase_ms[static_cast<size_t>(Phase::forward)] > 0);
  CHECK(single.bytes_per_step == 0);
  REQUIRE(single.memory.size() == 1);
  CHECK(single.memory[0].peak_bytes > 0);
  // Forward, loss, backward and step in each of 10 steps: the check's 5 (warm-up and timed
  // steps' worth), then 1 warm-up and the 4 timed ones, unchecked; without the check only those.
  CHECK(single.events.size() == 10 * 4);
  ExperimentConfig unchecked = small_config("mlp");
  unchecked.check = false;
  const RunMeasurement plain = Experiment(unchecked, random_images()).run({StrategyKind::single, 1});
  CHECK(plain.events.size() == 5 * 4);
  CHECK(plain.step_ms.size() == 4);
  CHECK_FALSE(plain.max_check_ulps.has_value());

  for (StrategyKind strategy :
       {StrategyKind::dp, StrategyKind::ddp, StrategyKind::ddp_unbucketed, StrategyKind::ddp_naive}) {
    INFO(strategy);
    RunMeasurement m = experiment.run({strategy, 2});
    CHECK(m.device_names == std::vector<std::string>{"cpu:0", "cpu:1"});
    REQUIRE(m.max_param_diff.has_value());
    CHECK(*m.max_param_diff < 1e-5);
    REQUIRE(m.first_step_param_diff.has_value());
    CHECK(*m.first_step_param_diff <= *m.max_param_diff);
    CHECK(std::fabs(m.final_loss - single.final_loss) < 1e-5);
    CHECK(m.bytes_per_step > 0);
    REQUIRE(m.memory.size() == 2);
    CHECK(m.memory[1].peak_bytes > 0);  // the replica on cpu:1
    bool device1_traced = false;
    for (const PhaseEvent& e : m.events) device1_traced |= e.track == 1;
    CHECK(device1_traced);
  }

  StepProfile profile = experiment.profile();
  std::shared_ptr<nn::Module> mlp = nn::models::mlp();
  CHECK(profile.parameter_bytes == mlp->num_parameters() * 4);
  CHECK(profile.parameter_count == 4);
  CHECK(profile.input_bytes == 16 * 28 * 28 * 4);
  CHECK(profile.forward_ms > 0);
}

TEST_CASE("the per-step check: every correct step within a few ulps, a wrong one caught at once", "[experiment]") {
  // Units: the float spacing at the tensor's largest element (2^-23 at 1.0).
  CHECK(max_ulps({{1.0 + std::ldexp(1.0, -22), 0.5}}, {{1.0, 0.5}}) == 2);
  CHECK(max_ulps({{0.25}, {3.0}}, {{0.25}, {3.0}}) == 0);

  for (const char* model : {"mlp", "lenet-relu"}) {
    INFO(model);
    Experiment experiment(small_config(model), random_images());
    CHECK(experiment.run({StrategyKind::single, 1}).max_check_ulps == 0.0);  // the same math, the same roundings
    for (int n : {2, 3}) {                                                   // 16 rows over 3 devices: 6 + 5 + 5
      for (StrategyKind strategy :
           {StrategyKind::dp, StrategyKind::ddp, StrategyKind::ddp_unbucketed, StrategyKind::ddp_d2l}) {
        INFO(strategy << " on " << n);
        RunMeasurement m = experiment.run({strategy, n});
        REQUIRE(m.max_check_ulps.has_value());
        CHECK(*m.max_check_ulps <= 8);
      }
    }
  }
  SECTION("a wrong scale: PyTorch's mean of means on unequal shards") {
    ExperimentConfig config = small_config("mlp");
    config.ddp.mean_of_means = true;
    Experiment experiment(config, random_images());
    CHECK(*experiment.run({StrategyKind::ddp, 3}).max_check_ulps > 1000);
  }
  SECTION("a missing shard, at the first step") {
    // Single-device training that drops each batch's last row.
    class MissingRow final : public test::WrappedSingle {
     public:
      using WrappedSingle::WrappedSingle;
      StepResult train_step(const data::Batch& b) override {
        const int64_t n = b.y.size(0) - 1;
        return inner_.train_step({b.x.narrow(0, 0, n), b.y.narrow(0, 0, n)});
      }
    };
    manual_seed(0);
    MissingRow wrong(nn::models::make("mlp"));
    StepCheck check("mlp", test::sgd, cpu(0));
    data::TensorDataset images = random_images(16);
    data::Batch batch{images.images.to(DType::f32) / 255.0, images.labels};
    check.before(wrong, batch);
    wrong.train_step(batch);
    CHECK(check.after(wrong) > 1000);
  }
}

TEST_CASE("the per-step check covers every ddp replica: a bug on rank 1 alone fails at its first step",
          "[experiment]") {
  ExperimentConfig config = small_config("mlp");
  config.steps = 1;  // the first step only
  config.warmup = 0;
  // The bug: rank 1's optimizer steps with another learning rate. Rank 0's step is right, so
  // comparing rank 0 with single-device training cannot see it.
  config.make_optimizer = [](std::vector<Tensor> params) {
    const double lr = params.at(0).device() == cpu(1) ? 0.11 : 0.1;
    return std::make_unique<optim::SGD>(std::move(params), optim::SGDOptions{.lr = lr});
  };
  Experiment wrong(config, random_images());
  const RunMeasurement m = wrong.run({StrategyKind::ddp, 2});
  REQUIRE(m.max_check_ulps.has_value());
  CHECK(*m.max_check_ulps <= 8);
  CHECK(m.replicas_checked);
  REQUIRE(m.replica_divergence.has_value());
  CHECK_THAT(*m.replica_divergence, Contains("after step 1,") && Contains("the replica of rank 1 (cpu:1)"));

  Experiment right(small_config("mlp"), random_images());
  for (StrategyKind strategy :
       {StrategyKind::ddp, StrategyKind::ddp_unbucketed, StrategyKind::ddp_naive, StrategyKind::ddp_d2l}) {
    INFO(strategy);
    const RunMeasurement ok = right.run({strategy, 3});
    CHECK(ok.replicas_checked);
    CHECK_FALSE(ok.replica_divergence.has_value());
  }
  CHECK_FALSE(right.run({StrategyKind::ddp, 1}).replicas_checked);  // one replica: nothing to compare
  CHECK_FALSE(right.run({StrategyKind::dp, 2}).replicas_checked);   // dp's replicas are copies of the master's
}

TEST_CASE("the per-step check measures a step beyond 8 ulps against the order of additions' own effect",
          "[experiment]") {
  CHECK(step_passes(8.0));
  CHECK_FALSE(step_passes(8.5));
  CHECK(step_passes(30, 7.5));  // within 4x
  CHECK_FALSE(step_passes(31, 7.5));

  // SGD on mlp: the order of additions moves a step by a few ulps at most, the plain rule holds.
  Experiment sgd(small_config("mlp"), random_images());
  (void)sgd.run({StrategyKind::single, 1});
  const RunMeasurement plain = sgd.run({StrategyKind::ddp, 3});
  CHECK(check_passed(plain));
  CHECK(*plain.max_check_ulps <= kCheckUlps);
  CHECK_FALSE(plain.check_order_ulps.has_value());  // measured only beyond kCheckUlps

  // Adam divides by sqrt(v) + eps: a nearly cancelling gradient element's rounding reaches the
  // parameter multiplied by up to lr / eps, for ddp and zero1 as for single's own step on its
  // rows reversed (docs/parallel-strategies.md, the equivalence metric).
  ExperimentConfig adam = small_config("mlp");
  adam.make_optimizer = [](std::vector<Tensor> params) {
    return std::make_unique<optim::Adam>(std::move(params), optim::AdamOptions{.lr = 1e-3});
  };
  Experiment amplified(adam, random_images());
  (void)amplified.run({StrategyKind::single, 1});
  for (StrategyKind strategy : {StrategyKind::ddp, StrategyKind::zero1}) {
    INFO(strategy);
    const RunMeasurement m = amplified.run({strategy, 2});
    INFO(*m.max_check_ulps << " ulps, the order of additions " << m.check_order_ulps.value_or(-1));
    CHECK(*m.max_check_ulps > kCheckUlps);
    REQUIRE(m.check_order_ulps.has_value());
    CHECK(check_passed(m));
  }

  // A wrong scale under SGD (PyTorch's mean of means on 6 + 5 + 5 rows) lands hundreds of times
  // further than the order of additions moves the step.
  ExperimentConfig wrong_scale = small_config("mlp");
  wrong_scale.ddp.mean_of_means = true;
  Experiment wrong(wrong_scale, random_images());
  (void)wrong.run({StrategyKind::single, 1});
  const RunMeasurement m = wrong.run({StrategyKind::ddp, 3});
  INFO(*m.max_check_ulps << " ulps, the order of additions " << m.check_order_ulps.value_or(-1));
  CHECK_FALSE(check_passed(m));
  REQUIRE(m.check_order_ulps.has_value());
  CHECK(*m.max_check_ulps > 100 * *m.check_order_ulps);
}

TEST_CASE("forward_slowdown: a run's forward per row of its largest shard over single's", "[experiment]") {
  RunMeasurement single, run;
  single.batch_size = run.batch_size = 256;
  single.phase_ms[static_cast<size_t>(Phase::forward)] = 10;  // 256 rows
  run.devices = 3;                                            // shards of 86, 85 and 85 rows
  run.phase_ms[static_cast<size_t>(Phase::forward)] = 5;
  CHECK(forward_slowdown(run, single) == Approx(5.0 / 86 / (10.0 / 256)));
  CHECK(forward_slowdown(single, single) == Approx(1));
  single.phase_ms[static_cast<size_t>(Phase::forward)] = 0;  // not timed: nothing to say
  CHECK(forward_slowdown(run, single) == 0);
}

TEST_CASE("Experiment needs a single-device run before it can profile", "[experiment]") {
  Experiment experiment(small_config("mlp"), random_images());
  CHECK_THROWS_WITH(experiment.profile(), Contains("single-device run first"));
  CHECK_THROWS_WITH(Experiment(small_config("mlp"), data::TensorDataset{}), Contains("training set is empty"));
}

TEST_CASE("the cost model adds latency plus bytes over bandwidth", "[experiment]") {
  // 1 us and 1 GB/s: a message of b bytes costs 0.001 + b * 1e-6 ms.
  const Link link{"test", 1, 1};
  StepProfile p{.forward_ms = 8,
                .loss_ms = 1,
                .backward_ms = 16,
                .step_ms = 2,
                .parameter_bytes = 1000000,
                .buffer_bytes = 0,
                .input_bytes = 400000,
                .output_bytes = 4000,
                .bucket_bytes = {200000, 800000},
                .parameter_count = 4};
  auto message = [](double bytes) { return 0.001 + bytes * 1e-6; };

  CHECK(predict(StrategyKind::single, 1, link, p).step_ms() == Approx(27));
  for (StrategyKind s : {StrategyKind::dp, StrategyKind::ddp, StrategyKind::ddp_unbucketed})
    CHECK(predict(s, 1, link, p).comm_ms == 0);

  // A on 4 devices: the root sends 3 input quarters, 3 parameter copies, receives 3 output
  // quarters and 3 gradient sets; loss and step stay on device 0.
  Prediction a = predict(StrategyKind::dp, 4, link, p);
  CHECK(a.compute_ms == Approx((8 + 16) / 4.0 + 1 + 2));
  CHECK(a.comm_ms == Approx(3 * message(100000) + 3 * message(1e6) + 3 * message(1000) + 3 * message(1e6)));

  // B: each bucket's ring all-reduce is 2(n-1) messages of 1/n of it. Together they take
  // 6 * (message(50000) + message(200000)) = 1.512 ms, less than backward's 16 / 4 ms, so
  // only the last bucket's 6 * message(200000) = 1.206 ms is exposed.
  Prediction b = predict(StrategyKind::ddp, 4, link, p);
  CHECK(b.compute_ms == Approx((8 + 1 + 16) / 4.0 + 2));
  CHECK(b.comm_ms == Approx(6 * message(200000)));

  // Unbucketed: one all-reduce per tensor after backward: 4 latencies each, plus the bytes.
  Prediction u = predict(StrategyKind::ddp_unbucketed, 4, link, p);
  CHECK(u.comm_ms == Approx(6 * (4 * 0.001 + 250000 * 1e-6)));

  // d2l: after backward, each of the 4 tensors whole through device 0, 3 copies in and 3 out:
  // 6 latencies per tensor, and every byte 6 times over the link.
  Prediction d2l = predict(StrategyKind::ddp_d2l, 4, link, p);
  CHECK(d2l.compute_ms == Approx(b.compute_ms));
  CHECK(d2l.comm_ms == Approx(6 * (4 * 0.001 + 1e6 * 1e-6)));
  CHECK(d2l.comm_ms > u.comm_ms);
  CHECK(predict(StrategyKind::ddp_d2l, 1, link, p).comm_ms == 0);

  // zero1: each bucket's reduce-scatter is half its ring all-reduce, 3 messages of 1/4 of it,
  // hidden but for the last, 3 * message(200000); the step on a quarter of the parameters; then
  // the all-gathers of both buckets, the other halves, after it.
  Prediction z = predict(StrategyKind::zero1, 4, link, p);
  CHECK(z.compute_ms == Approx((8 + 1 + 16 + 2) / 4.0));
  CHECK(z.comm_ms == Approx(3 * message(200000) + 3 * (message(50000) + message(200000))));
  CHECK(predict(StrategyKind::zero1, 1, link, p).comm_ms == 0);

  // A slow link: bucket all-reduces outlast backward, and all but its length is exposed.
  Prediction slow = predict(StrategyKind::ddp, 4, Link{"slow", 1, 0.01}, p);
  double total = 6 * (0.001 + 50000 * 1e-4) + 6 * (0.001 + 200000 * 1e-4);
  CHECK(slow.comm_ms == Approx(total - 16 / 4.0));

  // Naive: each bucket reduced onto rank 0 and broadcast back, (n-1) whole buckets each way.
  Prediction naive = predict(StrategyKind::ddp_naive, 4, link, p);
  CHECK(naive.comm_ms == Approx(std::max(6 * message(800000), 6 * message(200000) + 6 * message(800000) - 4)));

  CHECK_THROWS_WITH(predict(StrategyKind::ddp, 0, link, p), Contains("at least 1"));
}
