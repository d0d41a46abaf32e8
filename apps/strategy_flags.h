// --strategy and --strategies: the command line's strategy names, parsed once into kinds
// (parallel/strategy_kind.h) by parse_strategy_kind, whose error lists the valid names.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "duet/parallel/strategy_kind.h"

namespace duet::apps {

// `--strategy NAME` into `kind`; the help lists every kind with what it is.
CLI::Option* add_strategy_flag(CLI::App& cmd, const std::string& flag, parallel::StrategyKind& kind);
// `--strategies NAME,NAME,...` into `kinds`.
CLI::Option* add_strategies_flag(CLI::App& cmd, const std::string& flag, std::vector<parallel::StrategyKind>& kinds);

// The kinds' names, comma-separated: "single,dp,ddp".
std::string joined_names(const std::vector<parallel::StrategyKind>& kinds);

}  // namespace duet::apps
