// The cost model's pieces: the event simulation against step times worked out by hand, the
// alpha-beta fit, a calibration of real links, and the sweep's device counts.
#include <catch2/catch.hpp>
#include <cmath>

#include "duet/parallel/comm/local_communicator.h"
#include "duet/parallel/lab/link_calibration.h"
#include "duet/parallel/lab/scaling_sweep.h"
#include "duet/parallel/lab/step_prediction.h"
#include "duet/parallel/lab/step_simulation.h"

using namespace duet;
using namespace duet::parallel;
using Catch::Matchers::Contains;

namespace {

// Two layers, two buckets: the output layer's gradient (bucket 0) is ready 4 ms into a 10 ms
// backward, the first layer's (bucket 1) at its end. The link: alpha 1 ms, 1 ms per MB, so
// bucket 0 (3 MB) takes 1 + 3 ms and bucket 1 (2 MB) 1 + 2 ms.
DdpStepInput two_buckets(bool use_compute) {
  DdpStepInput in;
  in.compute = {.forward_ms = 2, .loss_ms = 0, .backward_ms = 10, .step_ms = 1};
  in.buckets = {{.ready_ms = 4, .bytes = 3'000'000}, {.ready_ms = 10, .bytes = 2'000'000}};
  in.all_reduce = {.alpha_ms = 1, .ms_per_byte = 1e-6};
  in.collectives_use_compute = use_compute;
  return in;
}

// A single-device run of 8 rows: forward 4 ms, backward 20, step 1; 100 bytes an image, 40 a
// row of logits. The parameters are each test's own.
StepProfile eight_row_profile() {
  StepProfile p;
  p.forward_ms = 4, p.loss_ms = 0, p.backward_ms = 20, p.step_ms = 1;
  p.batch_size = 8;
  p.input_bytes = 8 * 100, p.output_bytes = 8 * 40;
  return p;
}

}  // namespace

TEST_CASE("ddp's simulated step: buckets overlap backward on a link of their own", "[cost-model]") {
  // Backward runs from 2 to 12. Bucket 0 launches at 6 and ends at 10, hidden; bucket 1 is
  // ready at 12 and ends at 15; the step ends at 16.
  const SimulatedStep s = simulate_ddp_step(two_buckets(false));
  CHECK(s.launch_ms == std::vector<double>{6, 12});
  CHECK(s.finish_ms == std::vector<double>{10, 15});
  CHECK(s.backward_end_ms == 12);
  CHECK(s.step_ms == 16);
  CHECK(s.comm_busy_ms == 7);
  CHECK(s.comm_exposed_ms == 3);
  CHECK(s.hidden_share() == Approx(0.6));  // bucket 0's 3 MB of 5 finished before backward's end
  // Had backward computed its last gradient 7 ms in (at 9), with a 3 ms tail, nothing was done by then.
  DdpStepInput tail = two_buckets(false);
  tail.last_gradient_ms = 7;
  CHECK(simulate_ddp_step(tail).hidden_share() == 0);
  CHECK(simulate_ddp_step(tail).step_ms == 16);
  CHECK(s.comm_ms == 3);  // 16 - (2 + 10 + 1)
}

TEST_CASE("ddp's simulated step: transfers on the device's own cores hold backward up", "[cost-model]") {
  // Bucket 0 launches at 6; backward goes on through its latency (to 7, 5 ms done), then waits
  // for its 3 ms transfer (7 to 10), and ends at 15. Bucket 1 runs 15 to 18; the step ends at 19.
  const SimulatedStep s = simulate_ddp_step(two_buckets(true));
  CHECK(s.launch_ms == std::vector<double>{6, 15});
  CHECK(s.finish_ms == std::vector<double>{10, 18});
  CHECK(s.backward_end_ms == 15);
  CHECK(s.step_ms == 19);
  CHECK(s.comm_exposed_ms == 3);
}

TEST_CASE("ddp's simulated step: over an emulated link only the copies and additions hold the cores", "[cost-model]") {
  // Bucket 0 (3 MB) lasts 4 ms from 6, of which its last 1.5 ms (0.5 ms per MB on the cores)
  // hold backward up: 8.5 to 10. Backward, 4 ms done at 6 and 6.5 at 8.5, ends at 13.5; bucket 1
  // lasts 3 ms to 16.5; then the 1 ms step.
  DdpStepInput in = two_buckets(true);
  in.all_reduce_on_cores = AffineCost{.alpha_ms = 0.2, .ms_per_byte = 0.5e-6};
  const SimulatedStep s = simulate_ddp_step(in);
  CHECK(s.launch_ms == std::vector<double>{6, 13.5});
  CHECK(s.finish_ms == std::vector<double>{10, 16.5});
  CHECK(s.backward_end_ms == Approx(13.5));
  CHECK(s.step_ms == Approx(17.5));
  CHECK(s.hidden_share() == Approx(0.6));
}

TEST_CASE("ddp's simulated step: a bucket ready early waits for the link", "[cost-model]") {
  DdpStepInput in = two_buckets(false);
  in.buckets[1].ready_ms = 5;  // ready at 7, but bucket 0 holds the link until 10
  const SimulatedStep s = simulate_ddp_step(in);
  CHECK(s.launch_ms == std::vector<double>{6, 10});
  CHECK(s.finish_ms == std::vector<double>{10, 13});
  CHECK(s.step_ms == 14);         // backward ends at 12, bucket 1 at 13, then the 1 ms step
  CHECK(s.comm_exposed_ms == 1);  // bucket 1 finished at 13, after backward's 12
}

TEST_CASE("dp's simulated step: device 0's copies one after another", "[cost-model]") {
  // 3 devices, copies of alpha 0.5 ms and 1 ms per MB. Scatter 2 x (0.5 + 1), broadcast
  // 2 x (0.5 + 2), forward 4, gather 2 x (0.5 + 0.5) and its backward the same, loss 1,
  // backward 8, reduce 2 x (0.5 + 4), step 1.
  DpStepInput in{.devices = 3,
                 .replica = {.forward_ms = 4, .backward_ms = 8},
                 .loss_ms = 1,
                 .step_ms = 1,
                 .input_bytes = 1'000'000,
                 .output_bytes = 500'000,
                 .parameter_bytes = 2'000'000,
                 .buffer_bytes = 0,
                 .copy = {0.5, 1e-6},
                 .broadcast = AffineCost{0.5, 1e-6}.times(2),
                 .reduce = AffineCost{0.5, 2e-6}.times(2)};
  const SimulatedStep s = simulate_dp_step(in);
  CHECK(s.step_ms == Approx(3 + 5 + 4 + 2 + 1 + 2 + 8 + 9 + 1));
  CHECK(s.comm_ms == Approx(3 + 5 + 2 + 2 + 9));
  // One message per tensor: 3 tensors broadcast and 2 reduced to each replica pay the latency
  // 2 and 1 more times per replica.
  in.broadcast_messages = 3;
  in.reduce_messages = 2;
  CHECK(simulate_dp_step(in).step_ms == Approx(s.step_ms + 2 * 2 * 0.5 + 2 * 0.5));
  in.devices = 1;
  CHECK(simulate_dp_step(in).step_ms == Approx(4 + 1 + 8 + 1));
}

TEST_CASE("predict_step scales compute by the largest shard and builds buckets from the arrival times",
          "[cost-model]") {
  StepProfile p = eight_row_profile();
  p.parameter_sizes = {3'000'000, 2'000'000};
  p.parameter_bytes = 5'000'000;
  p.grad_ready_ms = {20, 8};  // the second parameter (the output layer) first
  p.arrival_buckets = {{1}, {0}};
  Links links;
  links.link = {1, 1e-6};
  links.all_reduce[2] = {1, 1e-6};
  // 2 devices, 4 rows each: forward 2, backward 10; buckets of 2 MB ready at 4, of 3 MB at 10,
  // then the 8-byte map of used parameters (1 ms) after backward.
  const SimulatedStep s = predict_step(StrategyKind::ddp, 2, 8, p, links);
  CHECK(s.launch_ms[0] == 6);
  CHECK(s.finish_ms[0] == Approx(9));
  CHECK(s.finish_ms[1] == Approx(12 + 4));
  CHECK(s.step_ms == Approx(16 + 1 + 1));
  // Weak scaling: 16 rows on 2 devices is the profile's 8 per device, compute unscaled.
  CHECK(predict_step(StrategyKind::single, 1, 8, p, links).step_ms == 25);
  CHECK(predict_step(StrategyKind::ddp, 2, 16, p, links).backward_end_ms == 24);
  // One device: collectives that cost nothing, on the device's cores, with ready times that
  // are not round numbers: the simulation still ends, at single-device training's step.
  p.grad_ready_ms = {19.7, 0.1 + 0.2};
  links.collectives_use_compute = true;
  CHECK(predict_step(StrategyKind::ddp, 1, 8, p, links).step_ms == Approx(25));
}

TEST_CASE("predict_step: the measured compute slowdown and replica threads cost every strategy but single",
          "[cost-model]") {
  StepProfile p = eight_row_profile();
  p.parameter_sizes = {1000};
  p.parameter_bytes = 1000;
  p.grad_ready_ms = {20};
  p.arrival_buckets = {{0}};
  Links links;
  links.link = links.copy = links.reduce_add = {0, 0};
  links.all_reduce[1] = links.all_reduce[2] = {0, 0};
  links.compute_slowdown = 1.5;
  // Single-device training is the profile itself: nothing scales it.
  CHECK(predict_step(StrategyKind::single, 1, 8, p, links).step_ms == 25);
  // dp on one device does single's work while the machine computes 1.5x slower: 24 * 1.5 + 1.
  CHECK(predict_step(StrategyKind::dp, 1, 8, p, links).step_ms == Approx(37));
  // 2 devices, 4 rows each, twice as slow: each device's forward and backward take single's 24 ms.
  links.compute_slowdown = 2;
  CHECK(predict_step(StrategyKind::ddp, 2, 8, p, links).backward_end_ms == Approx(24));
  links.compute_slowdown = 1;
  CHECK(predict_step(StrategyKind::ddp, 2, 8, p, links).backward_end_ms == Approx(12));
  // A step's replica threads, measured per device count, add once to dp's and ddp's step.
  const double ddp_ms = predict_step(StrategyKind::ddp, 2, 8, p, links).step_ms,
               dp_ms = predict_step(StrategyKind::dp, 2, 8, p, links).step_ms;
  links.replica_threads_ms[2] = 0.25;
  CHECK(predict_step(StrategyKind::ddp, 2, 8, p, links).step_ms == Approx(ddp_ms + 0.25));
  CHECK(predict_step(StrategyKind::dp, 2, 8, p, links).step_ms == Approx(dp_ms + 0.25));
  CHECK(predict_step(StrategyKind::single, 1, 8, p, links).step_ms == 25);
}

TEST_CASE("predict_step: ddp-d2l reduces each parameter through device 0, one after another, after backward",
          "[cost-model]") {
  StepProfile p = eight_row_profile();
  p.parameter_sizes = {3'000'000, 2'000'000, 1'000};
  p.parameter_bytes = 5'001'000;
  p.grad_ready_ms = {20, 8, 4};
  p.arrival_buckets = {{2, 1}, {0}};
  Links links;
  links.copy = {0.5, 1e-6};        // a copy: 0.5 ms + 1 ms per MB
  links.reduce_add = {0.5, 2e-6};  // a copy and its add on device 0: 0.5 ms + 2 ms per MB
  links.all_reduce[3] = {0, 0};    // never used by d2l
  // 3 devices, 3 rows the largest shard: forward 1.5, backward 7.5. Then each tensor alone:
  // 2 copies in and adds (1 + 4 ms per MB), 2 copies out (1 + 2 ms per MB): 2 ms + 6 ms per MB.
  const SimulatedStep s = predict_step(StrategyKind::ddp_d2l, 3, 8, p, links);
  REQUIRE(s.launch_ms.size() == 3);
  CHECK(s.backward_end_ms == Approx(9));
  CHECK(s.launch_ms[0] == Approx(9));  // nothing starts before backward ends
  CHECK(s.finish_ms[0] == Approx(9 + 2 + 18));
  CHECK(s.launch_ms[1] == Approx(s.finish_ms[0]));  // one after another, in parameter order
  CHECK(s.finish_ms[1] == Approx(29 + 2 + 12));
  CHECK(s.finish_ms[2] == Approx(43 + 2 + 0.006));
  CHECK(s.step_ms == Approx(45.006 + 1));
  CHECK(s.hidden_share() == 0);
  // Per-tensor latency: the same bytes in more tensors cost more.
  StepProfile split = p;
  split.parameter_sizes = {1'000'000, 1'000'000, 1'000'000, 1'000'000, 1'000'000, 1'000};
  split.grad_ready_ms = {20, 20, 20, 20, 8, 4};
  CHECK(predict_step(StrategyKind::ddp_d2l, 3, 8, split, links).step_ms == Approx(s.step_ms + 3 * 2));
  // Starting and joining the replica threads twice: for backward, and for the step.
  links.replica_threads_ms[3] = 0.25;
  CHECK(predict_step(StrategyKind::ddp_d2l, 3, 8, p, links).step_ms == Approx(s.step_ms + 0.5));
}

TEST_CASE("fit_link recovers alpha and beta from exact times, and refuses too few samples", "[cost-model]") {
  std::vector<TimedSize> samples;
  for (int64_t b : calibration_sizes()) samples.push_back({b, 0.02 + static_cast<double>(b) / 5e6});  // 20 us, 5 GB/s
  const LinkFit fit = fit_link("made up", samples);
  CHECK(fit.alpha_us == Approx(20).epsilon(1e-6));
  CHECK(fit.beta_gbps == Approx(5).epsilon(1e-6));
  REQUIRE_THROWS_WITH(fit_link("one size", {{4, 0.1}}), Contains("2 sizes or more"));
}

TEST_CASE("calibrating the local group and dp's copies gives finite, positive alpha and beta", "[cost-model]") {
  const std::vector<int64_t> sizes = {4, 4096, 262144};
  std::vector<LinkFit> fits;
  auto group = make_local_group({cpu(0), cpu(1)});
  fits.push_back(calibrate_ping_pong(group, sizes, 3));
  fits.push_back(calibrate_all_reduce(group, sizes, 3));
  fits.push_back(calibrate_copy(cpu(1), cpu(0), sizes, 3));
  fits.push_back(calibrate_reduce_add(cpu(1), cpu(0), sizes, 3));
  for (const LinkFit& fit : fits) {
    INFO(fit.what);
    CHECK(std::isfinite(fit.alpha_us));
    CHECK(fit.alpha_us >= 0);
    CHECK(std::isfinite(fit.beta_gbps));
    CHECK(fit.beta_gbps > 0);
    CHECK(fit.samples.size() == sizes.size());
  }
  CHECK_THAT(fits[1].what, Contains("all-reduce, 2 ranks"));
  const double together_ms = time_model_step("mlp", {1, 28, 28}, 4, {cpu(0), cpu(1)}, 2);
  CHECK(std::isfinite(together_ms));
  CHECK(together_ms > 0);
  const double threads_ms = time_replica_threads({cpu(0), cpu(1)}, 3);
  CHECK(std::isfinite(threads_ms));
  CHECK(threads_ms > 0);
}

TEST_CASE("a sweep skips the device counts the machine has no cores for, and says so", "[cost-model]") {
  const SweepPlan plan = plan_sweep({8, 1, 2, 4, 2}, 2, 1);
  CHECK(plan.cores_per_device == 1);
  CHECK(plan.device_counts == std::vector<int>{1, 2});
  REQUIRE(plan.skipped.size() == 2);
  CHECK_THAT(plan.skipped[0], Contains("skipping 4 devices") && Contains("need 4 cores"));
  CHECK_THAT(plan.skipped[1], Contains("skipping 8 devices"));
  // The default divides the cores among the largest count asked for.
  CHECK(plan_sweep({1, 2}, 8, 0).cores_per_device == 4);
  CHECK(plan_sweep({16}, 8, 0).cores_per_device == 1);
  CHECK(plan_sweep({16}, 8, 0).device_counts.empty());
  REQUIRE_THROWS_WITH(plan_sweep({0, 2}, 2, 1), Contains("at least 1"));
}

TEST_CASE("predict_step: zero1 reduce-scatters while backward runs, steps 1/N, and all-gathers after the step",
          "[cost-model][zero1]") {
  StepProfile p = eight_row_profile();
  p.parameter_sizes = {3'000'000, 2'000'000};
  p.parameter_bytes = 5'000'000;
  p.grad_ready_ms = {20, 8};
  p.arrival_buckets = {{1}, {0}};
  p.bucket_bytes = {2'000'000, 3'000'000};
  Links links;
  links.link = {1, 1e-6};
  links.all_reduce[2] = {1, 1e-6};
  // ddp's step is 18 (the test above). zero1's collectives are half the all-reduce, {0.5, 5e-7}:
  // the 2 MB bucket from 6 to 7.5, the 3 MB one from 12 to 14, the first half of the 8-byte map
  // to 14.5 and its second half to 15; the step on half the parameters, 0.5; then the two
  // buckets all-gathered, 1.5 + 2.
  const SimulatedStep s = predict_step(StrategyKind::zero1, 2, 8, p, links);
  CHECK(s.launch_ms[0] == 6);
  CHECK(s.finish_ms[0] == Approx(7.5));
  CHECK(s.finish_ms[1] == Approx(14));
  CHECK(s.step_ms == Approx(15 + 0.5 + 3.5));
  // The bytes are ddp's, in two halves: on a link where the all-reduce is pure bandwidth, zero1
  // moves the gather out of backward's shadow, and costs more than ddp whenever backward hid it.
  CHECK(predict_step(StrategyKind::ddp, 2, 8, p, links).step_ms == Approx(18));
  // One device: no communication, and the whole step.
  links.all_reduce[1] = {0, 0};
  CHECK(predict_step(StrategyKind::zero1, 1, 8, p, links).step_ms == Approx(25));
}
