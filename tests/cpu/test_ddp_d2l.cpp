// ddp-d2l: d2l's from-scratch data parallelism (parallel/d2l_all_reduce.h). It trains exactly as
// single-device training does, and its all-reduce is one reduce through device 0 per parameter
// tensor, 2(N-1) messages each, every one paying an emulated link's latency.
#include <catch2/catch.hpp>

#include <chrono>
#include <vector>

#include "duet/duet.h"
#include "duet/parallel/d2l_all_reduce.h"
#include "strategy_fixtures.h"

using namespace duet;
using namespace duet::parallel;
using namespace duet::test;
using Catch::Matchers::Contains;

namespace {

int64_t bytes_of(const std::vector<Tensor>& tensors) {
  int64_t bytes = 0;
  for (const Tensor& t : tensors) bytes += t.nbytes();
  return bytes;
}

}  // namespace

TEST_CASE("all_reduce_through_first: the sum added on the first device, in order, copied to every other", "[ddp-d2l]") {
  const std::vector<Tensor> grads = {from_vector<float>({1, 2, 3}, {3}).to(cpu(0)),
                                     from_vector<float>({10, 20, 30}, {3}).to(cpu(1)),
                                     from_vector<float>({100, 200, 300}, {3}).to(cpu(2))};
  comm_counter().reset();
  all_reduce_through_first(grads);
  for (const Tensor& g : grads) CHECK(g.to_vector<float>() == std::vector<float>({111, 222, 333}));
  CHECK(grads[2].device() == cpu(2));
  CHECK(comm_counter().bytes_moved() == 4 * 12);  // two copies in, two out, 12 bytes each
  CHECK_THROWS_WITH(all_reduce_through_first({grads[0], zeros({4}).to(cpu(1))}), Contains("does not match"));
}

TEST_CASE("ddp-d2l trains as single-device training does, with unequal and empty shards", "[ddp-d2l]") {
  const std::vector<data::Batch> batches = five_batches();  // 7 rows over 3: 3 + 3 + 1; 2 rows: one device idle
  for (const char* model : {"mlp", "lenet-relu"}) {
    auto expected_strategy = make_strategy(StrategyKind::single, fresh(model), sgd, {cpu(0)});
    const Params expected = trained(*expected_strategy, batches);
    for (int n : {2, 3}) {
      INFO(model << " on " << n << " devices");
      auto d2l = make_strategy(StrategyKind::ddp_d2l, fresh(model), sgd, cpus(n));
      CHECK(max_relative_diff(trained(*d2l, batches), expected) < 1e-5);
      auto& replicated = dynamic_cast<DistributedDataParallel&>(*d2l);
      CHECK(replicated.replica_divergence().empty());
    }
  }
}

TEST_CASE("ddp-d2l's all-reduce is one reduce through device 0 per parameter tensor, after backward", "[ddp-d2l]") {
  const int n = 3;
  auto d2l = make_strategy(StrategyKind::ddp_d2l, fresh("mlp"), sgd, cpus(n));
  const std::vector<Tensor> params = d2l->model().parameters();
  d2l->train_step(random_batch(12, 1));
  const PhaseTimes& phases = d2l->last_phases();
  // The trace's communication track: one collective per parameter tensor, in parameters()
  // order, each of its bytes, on device 0's track, one after another.
  REQUIRE(phases.comm_events.size() == params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const CommEvent& e = phases.comm_events[i];
    CHECK(e.name == "parameter " + std::to_string(i));
    CHECK(e.track == 0);
    CHECK(e.bytes == bytes_of({params[i]}));
    if (i > 0) CHECK(e.launch_us >= phases.comm_events[i - 1].finish_us);
  }
  // 2(n-1) copies of every gradient, and nothing else (mlp has no buffers to broadcast).
  CHECK(phases.bytes_moved == 2 * (n - 1) * bytes_of(params));
  CHECK(phases[Phase::all_reduce] > 0);
  CHECK(phases.overlap.bytes == bytes_of(params));
  CHECK(phases.overlap.hidden_bytes == 0);  // nothing overlaps backward

  SECTION("over an emulated link every copy pays the latency: 2(n-1) messages per tensor") {
    StrategyOptions options;
    options.link = link_model("2000,1000");  // 2 ms per message, a fast wire
    auto slow = make_strategy(StrategyKind::ddp_d2l, fresh("mlp"), sgd, cpus(n), options);
    slow->train_step(random_batch(12, 1));
    const double messages = 2.0 * (n - 1) * static_cast<double>(params.size());
    CHECK(slow->last_phases()[Phase::all_reduce] >= messages * 2.0 - 0.01);
  }
}

TEST_CASE("ddp-d2l runs in one process only", "[ddp-d2l]") {
  StrategyOptions options;
  options.comm = make_local_group({cpu(0)})[0];
  CHECK_THROWS_WITH(make_strategy(StrategyKind::ddp_d2l, fresh("mlp"), sgd, {cpu(0)}, options),
                    Contains("not ddp-d2l"));
}
