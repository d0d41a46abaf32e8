// The strategies by kind. Every strategy's name is in one table (strategy_kind.cpp): the command
// line is parsed into a kind once, results, traces and metrics print a kind with to_string, and
// everything in between compares kinds, never names.
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace duet::parallel {

enum class StrategyKind {
  single,          // one device
  dp,              // A: DataParallel (data_parallel.h)
  ddp,             // B: DistributedDataParallel, bucketed, ring all-reduce (distributed.h)
  ddp_unbucketed,  // B with one all-reduce per gradient after backward
  ddp_naive,       // B, bucketed, with the naive reduce-then-broadcast all-reduce
  ddp_d2l,         // B as d2l's book writes it: each gradient summed on device 0 and copied back
  zero1,           // B with a sharded optimizer (ZeRO stage 1): reduce-scatter, step a shard, all-gather
};

struct StrategyInfo {
  StrategyKind kind;
  std::string_view name;         // on the command line and in every output
  std::string_view description;  // one line, for --help
};

// Every kind, in the order --help lists them.
const std::vector<StrategyInfo>& strategy_table();
// Their names, in the same order.
std::vector<std::string> strategy_names();

// The kind named `name`; throws duet::Error naming it and listing the valid names otherwise.
StrategyKind parse_strategy_kind(std::string_view name);
std::string to_string(StrategyKind kind);
std::ostream& operator<<(std::ostream& out, StrategyKind kind);

// ddp and its variants: one replica per device, gradients all-reduced.
bool is_ddp(StrategyKind kind);
// ddp and its variants, and zero1: one replica per device, each rank's own loss and backward,
// gradients reduced over a communicator (DistributedDataParallel).
bool is_distributed(StrategyKind kind);
// The distributed kinds that run one rank per process too (mpirun): all but ddp-d2l, whose
// all-reduce copies every replica's gradients within one process.
bool runs_across_processes(StrategyKind kind);

}  // namespace duet::parallel
