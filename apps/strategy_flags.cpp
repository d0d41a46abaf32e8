#include "strategy_flags.h"

#include "duet/core/error.h"

namespace duet::apps {
namespace {

// Turns a name into its kind's number, which CLI11 then reads into the enum: the name is
// parsed here, once.
CLI::Validator strategy_kind_names() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          text = std::to_string(static_cast<int>(parallel::parse_strategy_kind(text)));
          return "";
        } catch (const Error& e) {
          return e.what();
        }
      },
      "");
}

std::string kinds_help(const std::string& what) {
  std::string help = what + ":";
  for (const parallel::StrategyInfo& s : parallel::strategy_table()) {
    help += "\n  " + std::string(s.name) + ": " + std::string(s.description);
  }
  return help;
}

}  // namespace

CLI::Option* add_strategy_flag(CLI::App& cmd, const std::string& flag, parallel::StrategyKind& kind) {
  return cmd.add_option(flag, kind, kinds_help("How to train"))
      ->type_name("NAME")
      ->transform(strategy_kind_names())
      ->default_str(parallel::to_string(kind));
}

CLI::Option* add_strategies_flag(CLI::App& cmd, const std::string& flag, std::vector<parallel::StrategyKind>& kinds) {
  return cmd.add_option(flag, kinds, kinds_help("Comma-separated strategies"))
      ->type_name("NAME,...")
      ->delimiter(',')
      ->transform(strategy_kind_names())
      ->default_str(joined_names(kinds));
}

std::string joined_names(const std::vector<parallel::StrategyKind>& kinds) {
  std::string text;
  for (parallel::StrategyKind kind : kinds) text += (text.empty() ? "" : ",") + parallel::to_string(kind);
  return text;
}

}  // namespace duet::apps
