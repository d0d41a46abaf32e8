// `duet compare`: trains single-device, DataParallel and DistributedDataParallel from the same
// seed on the same batches and prints where each one's time, bytes and memory go.
#pragma once

#include <CLI/CLI.hpp>

namespace duet::apps {

void add_compare_command(CLI::App& app, int& exit_code);

}  // namespace duet::apps
