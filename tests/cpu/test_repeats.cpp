// Repeated runs (parallel/lab/repeats.h): the median repeat is reported whole, and the per-step
// check's verdict covers every repeat.
#include <catch2/catch.hpp>

#include "duet/parallel/lab/repeats.h"

using namespace duet::parallel;

namespace {
RunMeasurement repeat(double ms, double ulps) {
  RunMeasurement m;
  m.strategy = StrategyKind::ddp;
  m.devices = 2;
  m.ms_per_step = ms;
  m.images_per_second = 256 / ms * 1e3;
  m.max_check_ulps = ulps;
  return m;
}
}  // namespace

TEST_CASE("median: the middle value, the mean of the middle two for an even count", "[repeats]") {
  CHECK(median({3.0}) == 3.0);
  CHECK(median({5.0, 1.0, 3.0}) == 3.0);
  CHECK(median({4.0, 1.0, 3.0, 2.0}) == 2.5);
  CHECK_THROWS(median({}));
}

TEST_CASE("median_repeat: the repeat of median step time, whole, with every repeat's check", "[repeats]") {
  std::vector<RunMeasurement> repeats = {repeat(12.0, 1.0), repeat(30.0, 2.0), repeat(10.0, 6.0)};
  repeats[0].phase_ms[0] = 7;  // the median repeat's own phases travel with it
  const RunMeasurement m = median_repeat(repeats);
  CHECK(m.ms_per_step == 12.0);
  CHECK(m.images_per_second == Approx(256 / 12.0 * 1e3));
  CHECK(m.phase_ms[0] == 7);
  CHECK(*m.max_check_ulps == 6.0);  // the worst step of any repeat
  CHECK(check_passed(m));
  // Every repeat's step time, in the order they ran, and how far apart they were.
  CHECK(m.repeat_ms_per_step == std::vector<double>{12.0, 30.0, 10.0});
  REQUIRE(repeat_spread(m).has_value());
  CHECK(*repeat_spread(m) == Approx((30.0 - 10.0) / 12.0));
  CHECK_FALSE(repeat_spread(median_repeat({repeat(12.0, 1.0)})).has_value());  // one run: no spread

  repeats[1].max_check_ulps = 40;  // beyond 4x the order of additions' effect in any repeat
  repeats[1].check_order_ulps = 9;
  repeats[2].check_order_ulps = 6;
  repeats[1].replica_divergence = "after step 3, the replica of rank 1 (cpu:1) diverged";
  const RunMeasurement failed = median_repeat(repeats);
  CHECK(*failed.check_order_ulps == 9);
  CHECK_FALSE(check_passed(failed));
  REQUIRE(failed.replica_divergence.has_value());
  CHECK(*failed.replica_divergence == *repeats[1].replica_divergence);
  CHECK_THROWS(median_repeat({}));
}
