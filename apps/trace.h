// Chrome trace-event JSON (chrome://tracing, ui.perfetto.dev) of every phase of every step:
// one process per strategy run, one thread per device, and for DDP a communication thread per
// device with every bucket's all-reduce (busy from its launch, or the previous one's finish, to
// its finish) and an instant event when the bucket was ready.
#pragma once

#include <string>
#include <vector>

#include "duet/parallel/lab/experiment.h"

namespace duet::apps {

// Throws duet::Error naming the file if it cannot be written.
void write_chrome_trace(const std::vector<parallel::RunMeasurement>& runs, const std::string& path);

}  // namespace duet::apps
