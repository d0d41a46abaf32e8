// The regime map's arithmetic (parallel/lab/regime_map.h): speedups over single on the same
// model and link, each cell's winner and its margin over the runner-up, and the cell's label.
#include <catch2/catch.hpp>

#include "duet/parallel/lab/regime_map.h"

using namespace duet::parallel;

namespace {

RegimePoint point(const std::string& model, const std::string& link, StrategyKind s, int devices, double ips,
                  bool measured = true) {
  RegimePoint p;
  p.model = model;
  p.link = link;
  p.strategy = s;
  p.devices = devices;
  p.measured = measured;
  p.images_per_second = ips;
  return p;
}

}  // namespace

TEST_CASE("regime map: each cell's winner and its margin over the runner-up", "[regime]") {
  const std::vector<RegimePoint> points = {
      point("mlp", "none", StrategyKind::single, 1, 1000), point("mlp", "none", StrategyKind::dp, 2, 1100),
      point("mlp", "none", StrategyKind::ddp, 2, 1232), point("mlp", "1gbe", StrategyKind::single, 1, 1000),
      point("mlp", "1gbe", StrategyKind::dp, 2, 200), point("mlp", "1gbe", StrategyKind::ddp, 2, 400),
      // Another device count and the predictions compete in cells of their own.
      point("mlp", "none", StrategyKind::dp, 4, 5000), point("mlp", "none", StrategyKind::ddp, 4, 2000, false),
      point("mlp", "none", StrategyKind::single, 1, 900, false)};
  const std::vector<RegimeCell> cells = regime_winners(points, true, 2);
  REQUIRE(cells.size() == 2);
  CHECK(cells[0].model == "mlp");
  CHECK(cells[0].link == "none");
  CHECK(cells[0].winner == StrategyKind::ddp);
  REQUIRE(cells[0].runner_up);
  CHECK(*cells[0].runner_up == StrategyKind::dp);
  CHECK(cells[0].margin == Approx(0.12));
  CHECK(cell_label(cells[0]) == "ddp +12%");
  // Where the link is too slow, single-device training wins.
  CHECK(cells[1].link == "1gbe");
  CHECK(cells[1].winner == StrategyKind::single);
  CHECK(*cells[1].runner_up == StrategyKind::ddp);
  CHECK(cells[1].margin == Approx(1.5));
  CHECK(cell_label(cells[1]) == "single +150%");

  const std::vector<RegimeCell> at_four = regime_winners(points, true, 4);
  REQUIRE(at_four.size() == 2);
  CHECK(at_four[0].winner == StrategyKind::dp);  // 5000 img/s on 4 beats single's 1000
  CHECK(at_four[1].winner == StrategyKind::single);
  CHECK_FALSE(at_four[1].runner_up);                                 // nothing else on 4 over 1gbe
  CHECK(cell_label(at_four[1]) == to_string(StrategyKind::single));  // no margin without a runner-up

  const std::vector<RegimeCell> predicted = regime_winners(points, false, 4);
  REQUIRE(predicted.size() == 1);
  CHECK(predicted[0].winner == StrategyKind::ddp);
  CHECK(predicted[0].margin == Approx(2000.0 / 900 - 1));
}

TEST_CASE("regime map: margins below 10% keep a decimal, and equals go to the first", "[regime]") {
  RegimeCell cell;
  cell.winner = StrategyKind::dp;
  cell.runner_up = StrategyKind::ddp;
  cell.margin = 0.024;
  CHECK(cell_label(cell) == "dp +2.4%");
  cell.margin = 0.0996;
  CHECK(cell_label(cell) == "dp +10%");
  cell.margin = 0;
  CHECK(cell_label(cell) == "dp +0.0%");

  const std::vector<RegimePoint> tie = {point("lenet", "pcie", StrategyKind::single, 1, 500),
                                        point("lenet", "pcie", StrategyKind::dp, 2, 800),
                                        point("lenet", "pcie", StrategyKind::ddp, 2, 800)};
  const std::vector<RegimeCell> cells = regime_winners(tie, true, 2);
  REQUIRE(cells.size() == 1);
  CHECK(cells[0].winner == StrategyKind::dp);
  CHECK(*cells[0].runner_up == StrategyKind::ddp);
  CHECK(cells[0].margin == 0);
}

TEST_CASE("regime map: speedups over single on the same model and link, measured or predicted", "[regime]") {
  std::vector<RegimePoint> points = {point("mlp", "none", StrategyKind::single, 1, 1000),
                                     point("mlp", "none", StrategyKind::ddp, 2, 1500),
                                     point("mlp", "pcie", StrategyKind::single, 1, 2000),
                                     point("mlp", "pcie", StrategyKind::ddp, 2, 1500),
                                     point("mlp", "none", StrategyKind::single, 1, 800, false),
                                     point("mlp", "none", StrategyKind::ddp, 8, 4000, false),
                                     point("lenet", "none", StrategyKind::ddp, 2, 100)};  // no single: no speedup
  fill_speedups(points);
  CHECK(*points[0].speedup == Approx(1));
  CHECK(*points[1].speedup == Approx(1.5));
  CHECK(*points[3].speedup == Approx(0.75));
  CHECK(*points[5].speedup == Approx(5));  // over the predicted single, not the measured one
  CHECK_FALSE(points[6].speedup);
}
