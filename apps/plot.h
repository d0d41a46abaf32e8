// Training curves as a PNG, drawn by gnuplot (Debian's gnuplot-nox).
#pragma once

#include <string>
#include <vector>

#include "duet/parallel/trainer.h"

namespace duet::apps {

// Loss on the left, train and test accuracy on the right, per epoch. Throws duet::Error if
// gnuplot is missing or fails.
void plot_history(const std::vector<parallel::EpochStats>& history, const std::string& png_path,
                  const std::string& title);

}  // namespace duet::apps
