// Strategy names: one table, one parser, one printer (parallel/strategy_kind.h).
#include <catch2/catch.hpp>

#include <set>
#include <sstream>

#include "duet/parallel/strategy_kind.h"

using namespace duet::parallel;
using Catch::Matchers::Contains;

TEST_CASE("every strategy name parses to its kind and prints back the same", "[strategy-kind]") {
  const std::vector<StrategyInfo>& table = strategy_table();
  REQUIRE(table.size() >= 5);
  std::set<StrategyKind> kinds;
  std::set<std::string> names;
  for (const StrategyInfo& s : table) {
    INFO(s.name);
    CHECK(parse_strategy_kind(s.name) == s.kind);
    CHECK(to_string(s.kind) == s.name);
    std::ostringstream printed;
    printed << s.kind;
    CHECK(printed.str() == s.name);
    CHECK_FALSE(s.description.empty());
    kinds.insert(s.kind);
    names.insert(std::string(s.name));
  }
  CHECK(kinds.size() == table.size());  // no kind twice
  CHECK(names.size() == table.size());  // no name twice
  CHECK(strategy_names() == std::vector<std::string>({"single", "dp", "ddp", "ddp-unbucketed", "ddp-naive", "ddp-d2l",
                                                      "zero1"}));  // what scripts read
}

TEST_CASE("an unknown strategy name is refused with the valid ones listed", "[strategy-kind]") {
  for (const char* wrong : {"fsdp", "", "DDP", "ddp ", "ddp-"}) {
    INFO("'" << wrong << "'");
    CHECK_THROWS_WITH(parse_strategy_kind(wrong), Contains("unknown strategy '" + std::string(wrong) + "'") &&
                                                      Contains("expected one of single, dp, ddp, ddp-unbucketed"));
  }
}

TEST_CASE("is_ddp: the kinds with one replica per device and all-reduced gradients", "[strategy-kind]") {
  CHECK_FALSE(is_ddp(StrategyKind::single));
  CHECK_FALSE(is_ddp(StrategyKind::dp));
  CHECK(is_ddp(StrategyKind::ddp));
  CHECK(is_ddp(StrategyKind::ddp_unbucketed));
  CHECK(is_ddp(StrategyKind::ddp_naive));
  CHECK(is_ddp(StrategyKind::ddp_d2l));
  CHECK(runs_across_processes(StrategyKind::ddp));
  CHECK_FALSE(runs_across_processes(StrategyKind::ddp_d2l));  // it copies gradients within one process
  CHECK_FALSE(runs_across_processes(StrategyKind::dp));
  // zero1 reduce-scatters instead: distributed, but not a ddp variant.
  CHECK_FALSE(is_ddp(StrategyKind::zero1));
  CHECK(is_distributed(StrategyKind::zero1));
  CHECK(is_distributed(StrategyKind::ddp_d2l));
  CHECK_FALSE(is_distributed(StrategyKind::dp));
  CHECK(runs_across_processes(StrategyKind::zero1));
}
