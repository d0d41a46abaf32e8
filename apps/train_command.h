// `duet train`: flags in, a trained model and a report out.
#pragma once

#include <CLI/CLI.hpp>

namespace duet::apps {

// Registers the subcommand; `exit_code` receives the command's result when it has run.
void add_train_command(CLI::App& app, int& exit_code);

}  // namespace duet::apps
