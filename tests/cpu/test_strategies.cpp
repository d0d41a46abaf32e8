// Strategy equivalence (docs/design.md section 7 (d)): on the same global batches, single-device
// training, DataParallel (A) and DistributedDataParallel (B, bucketed and unbucketed) reach
// the same parameters, on 2 and 3 logical CPU devices, with equal, unequal and too-small
// shards. Then what differs on purpose: DDP's mean of means, DataParallel's BatchNorm
// statistics, and the mechanics (errors naming the device, the buckets' fixed launch order).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "duet/duet.h"
#include "duet/kernels/cuda/runtime.h"
#include "strategy_fixtures.h"

using namespace duet;
using namespace duet::parallel;
using Catch::Matchers::Contains;

namespace {

using namespace duet::test;

// A one-layer model whose forward throws on cpu:1, so that one replica fails.
class ThrowsOnCpu1Impl final : public nn::Cloneable<ThrowsOnCpu1Impl> {
 public:
  ThrowsOnCpu1Impl() { weight_ = register_parameter("weight", zeros({16, 10})); }
  Tensor forward(const Tensor& x) override {
    DUET_CHECK(x.device() != cpu(1), "deliberate failure in forward");
    return matmul(x.flatten(1), parameter(weight_));
  }
  std::string name() const override { return "ThrowsOnCpu1"; }

 private:
  size_t weight_ = 0;
};

}  // namespace

TEST_CASE("single-device training and both strategies agree after 5 SGD steps", "[strategies]") {
  std::vector<data::Batch> batches = five_batches();
  for (LossReduction loss : {LossReduction::mean, LossReduction::sum}) {
    // A summed loss has gradients about 10x larger on these batches: a smaller step.
    const double lr = loss == LossReduction::mean ? 0.1 : 0.01;
    OptimizerFactory make_sgd = [lr](std::vector<Tensor> params) {
      return std::make_unique<optim::SGD>(std::move(params), optim::SGDOptions{.lr = lr, .momentum = 0.9});
    };
    for (std::string model : {"lenet-relu", "mlp"}) {
      std::shared_ptr<nn::Module> reference_model = fresh(model);
      SingleDevice reference(reference_model, make_sgd(reference_model->parameters()), cpu(0), loss);
      Params expected = trained(reference, batches);

      for (int n : {2, 3}) {
        INFO(model << " on " << n << " devices, " << (loss == LossReduction::mean ? "mean" : "sum") << " loss");
        std::shared_ptr<nn::Module> dp_model = fresh(model);
        DataParallel dp(dp_model, make_sgd(dp_model->parameters()), cpus(n), loss);
        double dp_diff = max_relative_diff(trained(dp, batches), expected);
        INFO("DataParallel vs single: " << dp_diff);
        CHECK(dp_diff < 1e-5);

        DDPOptions bucketed_options = tiny_buckets();
        bucketed_options.loss = loss;
        DistributedDataParallel bucketed(fresh(model), make_sgd, cpus(n), bucketed_options);
        REQUIRE(bucketed.buckets().buckets.size() >= 3);
        double bucketed_diff = max_relative_diff(trained(bucketed, batches), expected);
        INFO("DDP bucketed vs single: " << bucketed_diff);
        CHECK(bucketed_diff < 1e-5);

        DDPOptions plain{.bucketed = false, .loss = loss};
        DistributedDataParallel unbucketed(fresh(model), make_sgd, cpus(n), plain);
        double unbucketed_diff = max_relative_diff(trained(unbucketed, batches), expected);
        INFO("DDP unbucketed vs single: " << unbucketed_diff);
        CHECK(unbucketed_diff < 1e-5);
      }
    }
  }
}

TEST_CASE("the strategies report the global mean loss and the correct count", "[strategies]") {
  data::Batch batch = random_batch(7, 5);
  std::shared_ptr<nn::Module> m1 = fresh("mlp"), m2 = fresh("mlp");
  SingleDevice single(m1, sgd(m1->parameters()), cpu(0));
  DataParallel dp(m2, sgd(m2->parameters()), cpus(3));
  DistributedDataParallel ddp(fresh("mlp"), sgd, cpus(3));
  StepResult a = single.train_step(batch), b = dp.train_step(batch), c = ddp.train_step(batch);
  CHECK(b.loss == Approx(a.loss).epsilon(1e-6));
  CHECK(c.loss == Approx(a.loss).epsilon(1e-6));
  CHECK(b.correct == a.correct);
  CHECK(c.correct == a.correct);
  CHECK(b.count == 7);
  CHECK(c.count == 7);
}

TEST_CASE("DDP's mean of means differs from DataParallel on unequal shards", "[strategies]") {
  // 7 rows over 2 devices: 4 + 3. The mean of the two shard means weights a row of the
  // 3-row shard by 1/6 and one of the 4-row shard by 1/8, where the global mean gives 1/7.
  std::vector<data::Batch> batches;
  for (uint64_t i = 0; i < 5; ++i) batches.push_back(random_batch(7, 200 + i));
  std::shared_ptr<nn::Module> dp_model = fresh("lenet-relu");
  DataParallel dp(dp_model, sgd(dp_model->parameters()), cpus(2));
  Params expected = trained(dp, batches);

  DDPOptions options = tiny_buckets();
  options.mean_of_means = true;
  DistributedDataParallel ddp(fresh("lenet-relu"), sgd, cpus(2), options);
  double diff = max_relative_diff(trained(ddp, batches), expected);
  INFO("mean of means vs DataParallel, max relative parameter difference: " << diff);
  CHECK(diff > 1e-4);
}

TEST_CASE("an exception in one replica's forward names its device", "[strategies]") {
  data::Batch batch = random_batch(4, 9, {4, 4});
  SECTION("DataParallel") {
    auto model = std::make_shared<ThrowsOnCpu1Impl>();
    DataParallel dp(model, sgd(model->parameters()), cpus(3));
    CHECK_THROWS_WITH(dp.train_step(batch),
                      Contains("replica on cpu:1 failed") && Contains("deliberate failure in forward"));
  }
  SECTION("DistributedDataParallel") {
    // Rank 1 fails before its all-reduce and aborts the group: the others stop waiting at once
    // (not after the default 300 s timeout), and the caller sees rank 1's error.
    DistributedDataParallel ddp(std::make_shared<ThrowsOnCpu1Impl>(), sgd, cpus(3));
    auto start = std::chrono::steady_clock::now();
    CHECK_THROWS_WITH(ddp.train_step(batch),
                      Contains("replica on cpu:1 failed") && Contains("deliberate failure in forward"));
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
  }
}

TEST_CASE("both strategies refuse a model that does not live on their first device, naming the parameter",
          "[strategies]") {
  auto model = fresh("mlp", cpu(0));
  const std::string where = "parameter '" + model->named_parameters()[0].first + "' is on cpu:0";
  const std::vector<Device> devices{cpu(1), cpu(0)};
  CHECK_THROWS_WITH(DataParallel(model, sgd(model->parameters()), devices),
                    Contains("DataParallel: the model must live on cpu:1 (devices[0])") && Contains(where));
  CHECK_THROWS_WITH(DistributedDataParallel(model, sgd, devices),
                    Contains("DistributedDataParallel: the model must live on cpu:1 (devices[0])") && Contains(where));
}

TEST_CASE("DataParallel keeps only replica 0's BatchNorm statistics", "[strategies]") {
  auto make = [] {
    manual_seed(3);
    return std::shared_ptr<nn::Module>(nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 3, 3)), nn::BatchNorm2d(3),
                                                      nn::Flatten(), nn::Linear(3 * 6 * 6, 10)));
  };
  data::Batch batch = random_batch(6, 11, {1, 8, 8});  // 3 + 3 rows over 2 devices

  std::shared_ptr<nn::Module> master = make();
  DataParallel dp(master, sgd(master->parameters()), cpus(2));
  dp.train_step(batch);

  // The statistics that replica 0 alone computes: one forward over its shard, rows 0..2.
  std::shared_ptr<nn::Module> shard0 = make();
  shard0->forward(batch.x.narrow(0, 0, 3));
  std::shared_ptr<nn::Module> whole = make();
  whole->forward(batch.x);

  nn::NamedTensors got = master->named_buffers(), want = shard0->named_buffers(), all = whole->named_buffers();
  REQUIRE(got.size() == 3);
  for (size_t i = 0; i < got.size(); ++i) {
    INFO(got[i].first);
    std::vector<double> g = got[i].second.to_vector<double>(), w = want[i].second.to_vector<double>();
    for (size_t j = 0; j < g.size(); ++j) CHECK(g[j] == Approx(w[j]).epsilon(1e-6));
  }
  // And they are not the whole batch's: replica 1's update was dropped.
  CHECK(max_relative_diff({{"mean", got[0].second.to_vector<double>()}},
                          {{"mean", all[0].second.to_vector<double>()}}) > 1e-4);
}

TEST_CASE("DDP launches its buckets in the fixed reverse-parameter order", "[strategies]") {
  SECTION("the layout: reverse parameter order, every parameter once") {
    std::shared_ptr<nn::Module> model = fresh("lenet-relu");
    BucketLayout layout = plan_buckets(model->parameters(), 4 << 10, 64 << 10);
    REQUIRE(layout.buckets.size() >= 3);
    std::vector<size_t> order;
    for (const auto& bucket : layout.buckets)
      for (const auto& entry : bucket.entries) order.push_back(entry.param);
    std::vector<size_t> reversed;
    for (size_t i = model->parameters().size(); i-- > 0;) reversed.push_back(i);
    CHECK(order == reversed);
  }
  SECTION("a bucket that is ready before its predecessor waits for it") {
    // One rank, one parameter per bucket (caps of 1 byte). Layout: bucket 0 = c, 1 = b, 2 = a.
    Tensor a = zeros({3}), b = zeros({2}), c = zeros({4});
    for (const Tensor& t : {a, b, c}) t.requires_grad_();
    auto group = make_local_group(cpus(1));
    auto layout = std::make_shared<const BucketLayout>(plan_buckets({a, b, c}, 1, 1));
    auto reducer = BucketReducer::create(layout, {a, b, c}, group[0]);
    reducer->prepare(ReduceOp::sum);
    sum(a).backward();  // bucket 2 ready: must not launch before 0 and 1
    CHECK(reducer->launch_order().empty());
    sum(c * 2.0).backward();  // bucket 0: launches
    CHECK(reducer->launch_order() == std::vector<size_t>{0});
    sum(b).backward();  // bucket 1: launches, then the waiting bucket 2
    reducer->finish();
    CHECK(reducer->ready_order() == std::vector<size_t>{2, 0, 1});
    CHECK(reducer->launch_order() == std::vector<size_t>{0, 1, 2});
    CHECK(c.grad().to_vector<float>() == std::vector<float>(4, 2.0f));  // copied back from the bucket
  }
  SECTION("every rank of a 3-device DDP step") {
    DistributedDataParallel ddp(fresh("lenet-relu"), sgd, cpus(3), tiny_buckets());
    ddp.train_step(random_batch(7, 21));
    std::vector<size_t> expected(ddp.buckets().buckets.size());
    for (size_t k = 0; k < expected.size(); ++k) expected[k] = k;
    for (size_t r = 0; r < 3; ++r) {
      INFO("rank " << r);
      CHECK(ddp.launch_order(r) == expected);
      CHECK(ddp.ready_order(r).size() == expected.size());
    }
  }
}

TEST_CASE("DDP's replica check names the first diverged parameter", "[strategies]") {
  DDPOptions options;
  options.check_every = 1;
  DistributedDataParallel ddp(fresh("mlp"), sgd, cpus(2), options);
  ddp.train_step(random_batch(6, 31));  // consistent: no throw
  std::string first = ddp.replica(1).named_parameters()[0].first;
  {
    NoGradGuard no_grad;
    ddp.replica(1).parameters()[0].add_(ones_like(ddp.replica(1).parameters()[0]), 1e-3);
  }
  CHECK_THROWS_WITH(ddp.train_step(random_batch(6, 32)), Contains("rank 1 (cpu:1)") && Contains("'" + first + "'"));
}

TEST_CASE("both strategies record per-phase times and bytes moved", "[strategies]") {
  data::Batch batch = random_batch(8, 41);
  std::shared_ptr<nn::Module> model = fresh("mlp");
  DataParallel dp(model, sgd(model->parameters()), cpus(2));
  dp.train_step(batch);
  const PhaseTimes& a = dp.last_phases();
  CHECK(a[Phase::forward] > 0);
  CHECK(a[Phase::backward] > 0);
  CHECK(a[Phase::all_reduce] == 0);
  // At least the broadcast of the parameters to cpu:1 and their gradients' way back.
  CHECK(a.bytes_moved >= 2 * model->num_parameters() * 4);

  DistributedDataParallel ddp(fresh("mlp"), sgd, cpus(2));
  ddp.train_step(batch);
  const PhaseTimes& b = ddp.last_phases();
  CHECK(b[Phase::backward] > 0);
  CHECK(b[Phase::broadcast] == 0);
  CHECK(b.bytes_moved > 0);
  CHECK(ddp.last_phases_per_rank().size() == 2);
  CHECK(b.total_ms() > 0);

  // Exact GPU phases wait for CUDA devices only: on CPU devices the same phases come out.
  set_exact_gpu_phases(true);
  dp.train_step(batch);
  set_exact_gpu_phases(false);
  CHECK(dp.last_phases()[Phase::forward] > 0);
  CHECK(dp.last_phases()[Phase::backward] > 0);
  CHECK_NOTHROW(cuda::synchronize(cpu(0)));
}

TEST_CASE("GraphedSingleDevice refuses what a CUDA graph cannot replay", "[strategies]") {
  std::shared_ptr<nn::Module> model = fresh("mlp");
  CHECK_THROWS_WITH(GraphedSingleDevice(model, sgd(model->parameters()), cpu(0)), Contains("need a CUDA device"));
  CHECK_THROWS_WITH(GraphedSingleDevice(model, std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions{}),
                                        cuda_device(0)),
                    Contains("cannot be replayed from a CUDA graph"));
  CHECK_THROWS_WITH(GraphedSingleDevice(model, sgd(model->parameters()), cuda_device(0), LossReduction::mean, 0),
                    Contains("warmup_steps must be >= 1"));
  CHECK_FALSE(cuda::capturing(cuda_device(0)));
  CHECK_FALSE(cuda::capturing(cpu(0)));
  if (cuda::device_count() == 0) CHECK_THROWS_AS(cuda::CapturedWork(cuda_device(0)), Error);
}
