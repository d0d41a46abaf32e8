// `duet regime`: the regime map. Measures single, dp, ddp and ddp-d2l for each bundled model over
// each emulated link on 2 logical CPU devices, predicts them on 2, 4 and 8 with the cost model,
// and writes which strategy wins where (regime.csv, regime.json and two plots).
#pragma once

#include <CLI/CLI.hpp>

namespace duet::apps {

void add_regime_command(CLI::App& app, int& exit_code);

}  // namespace duet::apps
