// `duet compare`'s cost model: calibrate the links a run uses before the sweep, then predict
// every measured run's step from the single-device run (the event simulation of
// parallel/step_prediction.h), and with --predict the same on GPU presets.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "duet/core/device.h"
#include "duet/parallel/comm/communicator.h"
#include "duet/parallel/link_calibration.h"
#include "duet/parallel/step_prediction.h"

namespace duet::apps {

struct CalibratedLinks {
  parallel::Links links;
  std::vector<parallel::LinkFit> fits;  // what was measured, for the report
};

// What the sweep will use: dp's copies (in one process), the communicator's ping-pong and its
// all-reduce at every device count in `counts` of 2 or more (ring, and naive when asked). In
// one process the ranks are devices `first`, first+1, ...; across processes `comm` is this
// rank's, and every rank must call this at once.
CalibratedLinks calibrate_links(Device first, const std::vector<int>& counts, bool naive,
                                const std::shared_ptr<parallel::Communicator>& comm);

}  // namespace duet::apps
