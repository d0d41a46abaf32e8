// Predicted step times: the single-device run's measured compute (per phase, and for backward
// per parameter: when each gradient was ready) and a set of links, turned into an event
// simulation of each strategy's step (step_simulation.h). The links come either from a
// calibration of the ones in use (link_calibration.h) or from a GPU preset (nvlink, pcie).
// docs/parallel-strategies.md, "The cost model", says what is measured and what is assumed.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>

#include "duet/parallel/lab/cost_model.h"
#include "duet/parallel/lab/step_simulation.h"

namespace duet::parallel {

struct Links {
  std::string name;  // "measured here", "NVLink (NCCL)", "PCIe (NCCL)"
  // dp. On CPU devices, duet's DataParallel: device 0 copies each shard out, each replica's
  // parameters, each logit block in and its gradient out, and copies and adds each replica's
  // gradients, one after another. With dp_collectives (PyTorch's DataParallel on GPUs), the
  // parameters go in one NCCL broadcast and the gradients come back in one NCCL reduce.
  AffineCost copy;
  AffineCost reduce_add;  // one replica's gradients onto device 0
  bool dp_collectives = false;
  // The link itself (ping-pong): NCCL's broadcast and reduce, and all-reduces at device counts
  // that were not measured (a ring: 2(N-1) messages of 1/N of the data).
  AffineCost link;
  std::map<int, AffineCost> all_reduce;        // measured: the whole all-reduce among N ranks
  std::map<int, AffineCost> naive_all_reduce;  // ddp-naive's, measured
  // Over an emulated link (link_model.h), the same measured without it: the part of each
  // all-reduce that works on the devices' cores (the rest is the link's wait, which leaves them
  // free); and a plain memory copy (DDP's copy back into .grad is no message). Empty, and the
  // copy equal to `copy`, where nothing is emulated.
  std::map<int, AffineCost> all_reduce_on_cores, naive_all_reduce_on_cores;
  AffineCost memory_copy;
  // CPU devices: a collective's copies and additions run on the device's own cores.
  bool collectives_use_compute = false;
  // Measured just before the run: how much slower its devices compute than the single-device run
  // did (memory bandwidth and caches shared by the devices at once, the machine's other load at
  // the time); it scales the compute of every strategy but single. 1: not measured.
  double compute_slowdown = 1;
  // Measured: starting and joining one thread per local device (run_on_devices), which dp and
  // ddp do once per step, keyed by the run's device count; 0 where not measured (the presets).
  std::map<int, double> replica_threads_ms;
  // Measured (step_overhead.h): what a strategy's step on that many devices costs beyond the
  // simulation (thread wake-ups, bookkeeping), added to its step; none where not measured.
  std::map<std::pair<StrategyKind, int>, double> step_overhead_ms;
  // DDP's ranks are processes: a few small all-reduces per step (shard counts, the global loss).
  bool multi_process = false;
  // The single run's time outside its phases (waiting for the loader, the host between phases)
  // recurs in every step here; on the GPU presets the loader runs ahead on its own thread.
  bool host_time_recurs = true;

  AffineCost all_reduce_at(int devices, bool naive) const;
  std::optional<AffineCost> all_reduce_on_cores_at(int devices, bool naive) const;
};

// NCCL over NVLink 4 (H100/H200 SXM) and over PCIe 4.0 x16, for `duet compare --predict`:
// figures and sources in docs/parallel-strategies.md. PyTorch's DataParallel: dp_collectives.
Links nvlink_links();
Links pcie_links();

// The step of `strategy` on `devices` devices at global batch `batch_size`: every device
// computes in proportion to its largest shard's rows.
SimulatedStep predict_step(StrategyKind strategy, int devices, int64_t batch_size, const StepProfile& profile,
                           const Links& links);

}  // namespace duet::parallel
