#include "duet/parallel/strategy_kind.h"

#include <ostream>

#include "duet/core/error.h"

namespace duet::parallel {
namespace {

const StrategyInfo& info(StrategyKind kind) {
  for (const StrategyInfo& s : strategy_table()) {
    if (s.kind == kind) return s;
  }
  DUET_FAIL("strategy kind ", static_cast<int>(kind), " is missing from strategy_table()");
}

std::string listed_names() {
  std::string list;
  for (const StrategyInfo& s : strategy_table()) list += (list.empty() ? "" : ", ") + std::string(s.name);
  return list;
}

}  // namespace

const std::vector<StrategyInfo>& strategy_table() {
  static const std::vector<StrategyInfo> table = {
      {StrategyKind::single, "single", "one device"},
      {StrategyKind::dp, "dp", "DataParallel: scatter, replicate and gather through device 0, step there"},
      {StrategyKind::ddp, "ddp", "DDP: per-device loss, bucketed ring all-reduce overlapping backward"},
      {StrategyKind::ddp_unbucketed, "ddp-unbucketed", "DDP with one all-reduce per gradient after backward"},
      {StrategyKind::ddp_naive, "ddp-naive", "DDP, bucketed, with a reduce-then-broadcast all-reduce"},
      {StrategyKind::ddp_d2l, "ddp-d2l",
       "d2l's from-scratch DDP: after backward, each gradient summed on device 0 and copied back, one at a time"},
      {StrategyKind::zero1, "zero1",
       "ZeRO-1: DDP whose buckets are reduce-scattered, each device stepping 1/N of the parameters, then all-gathered"},
  };
  return table;
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const StrategyInfo& s : strategy_table()) names.emplace_back(s.name);
  return names;
}

StrategyKind parse_strategy_kind(std::string_view name) {
  for (const StrategyInfo& s : strategy_table()) {
    if (s.name == name) return s.kind;
  }
  DUET_FAIL("unknown strategy '", name, "': expected one of ", listed_names());
}

std::string to_string(StrategyKind kind) { return std::string(info(kind).name); }

std::ostream& operator<<(std::ostream& out, StrategyKind kind) { return out << info(kind).name; }

bool is_ddp(StrategyKind kind) {
  return kind == StrategyKind::ddp || kind == StrategyKind::ddp_unbucketed || kind == StrategyKind::ddp_naive ||
         kind == StrategyKind::ddp_d2l;
}

bool is_distributed(StrategyKind kind) { return is_ddp(kind) || kind == StrategyKind::zero1; }

bool runs_across_processes(StrategyKind kind) { return is_distributed(kind) && kind != StrategyKind::ddp_d2l; }

}  // namespace duet::parallel
