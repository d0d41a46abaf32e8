// `duet compare`'s cost model: calibrate the links a run uses before the sweep, then predict
// every measured run's step from the single-device run (the event simulation of
// parallel/lab/step_prediction.h), and with --predict the same on GPU presets.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "duet/core/device.h"
#include "duet/core/shape.h"
#include "duet/parallel/comm/communicator.h"
#include "duet/parallel/lab/link_calibration.h"
#include "duet/parallel/lab/step_prediction.h"

namespace duet::apps {

struct CalibratedLinks {
  parallel::Links links;
  std::vector<parallel::LinkFit> fits;  // what was measured, for the report
};

// What the sweep will use: dp's copies (in one process), the communicator's ping-pong and its
// all-reduce at every device count in `counts` of 2 or more (ring, and naive when asked), and
// the start and join of a step's replica threads at every count (this rank's one thread, across
// processes), all over `link`; over an emulated link also the all-reduces and a copy without it
// (the work on the cores). In one process the ranks are devices `first`, first+1, ...; across
// processes `comm` is this rank's, and every rank must call this at once.
CalibratedLinks calibrate_links(Device first, const std::vector<int>& counts, bool naive,
                                const std::shared_ptr<parallel::Communicator>& comm, const parallel::LinkModel& link);

// The compute load each run starts under. The model scales the single-device run's per-phase
// times, but a CPU's load moves between runs (other processes, the hypervisor's neighbours), and
// runs on several devices also share memory bandwidth and caches, and a smaller shard computes
// less efficiently per row. So the model's own forward, loss and backward is timed on `first`
// alone at the single-device run's batch just before that run, and at a run's shard size on all
// of its devices at once just before it: their ratio per row is the run's compute slowdown,
// contention, shard size and drift together, measured rather than fitted. (A fixed workload
// with a memory-bound pass contended far more than the models' GEMMs and convolutions do, and
// from minute to minute.)
class ComputeLoad {
 public:
  // `comm`: across processes, this rank's communicator; null in one process. `example`: one
  // example's shape.
  ComputeLoad(Device first, std::shared_ptr<parallel::Communicator> comm, std::string model, Shape example);
  // Before the single-device run (under MPI, on rank 0 alone), at its batch of `rows`.
  void before_single(int64_t rows);
  // Before a run on `devices` devices whose largest shard has `rows` rows (under MPI, on every
  // rank at once): its time per row over before_single's; 1 when that was not measured (the
  // other ranks under MPI).
  double before_run(int devices, int64_t rows);

 private:
  static constexpr int kRepeats = 9;
  Device first_;
  std::shared_ptr<parallel::Communicator> comm_;
  std::string model_;
  Shape example_;
  int64_t single_rows_ = 0;
  double single_ms_ = 0;
};

}  // namespace duet::apps
