#include "compare_prediction.h"

#include <algorithm>
#include <utility>

#include "duet/parallel/distributed.h"

namespace duet::apps {
namespace {

std::vector<Device> devices_from(Device first, int n) {
  std::vector<Device> out;
  for (int i = 0; i < n; ++i) out.push_back({first.type, first.index + i});
  return out;
}

}  // namespace

CalibratedLinks calibrate_links(Device first, const std::vector<int>& counts, bool naive,
                                const std::shared_ptr<parallel::Communicator>& comm) {
  const std::vector<int64_t> sizes = parallel::calibration_sizes();
  CalibratedLinks out;
  parallel::Links& links = out.links;
  links.name = "calibrated here";
  // On CPU devices a collective's copies and additions run on the ranks' own cores.
  links.collectives_use_compute = first.is_cpu();
  auto keep = [&](parallel::LinkFit fit) {
    out.fits.push_back(fit);
    return fit.cost();
  };
  if (comm) {
    // Across processes: this rank's communicator, the ranks' parts running at once.
    links.multi_process = true;
    links.link = keep(parallel::fit_link(comm->name() + " ping-pong", parallel::time_ping_pong(*comm, sizes, 15)));
    links.all_reduce[comm->world_size()] =
        keep(parallel::fit_link(comm->name() + " all-reduce, " + std::to_string(comm->world_size()) + " ranks",
                                parallel::time_all_reduce(*comm, sizes, 15)));
    links.copy = links.reduce_add = links.link;
    links.replica_threads_ms[comm->world_size()] = parallel::time_replica_threads({first});  // this rank's one
    return out;
  }
  const Device second{first.type, first.index + 1};
  links.copy = keep(parallel::calibrate_copy(second, first, sizes));
  links.reduce_add = keep(parallel::calibrate_reduce_add(second, first, sizes));
  links.link = keep(parallel::calibrate_ping_pong(parallel::make_ddp_group(devices_from(first, 2), {}), sizes));
  for (int n : counts) {
    links.replica_threads_ms[n] = parallel::time_replica_threads(devices_from(first, n));
    if (n < 2) continue;
    links.all_reduce[n] =
        keep(parallel::calibrate_all_reduce(parallel::make_ddp_group(devices_from(first, n), {}), sizes));
    if (naive) {
      parallel::DDPOptions options;
      options.algorithm = parallel::LocalAlgorithm::naive;
      links.naive_all_reduce[n] =
          keep(parallel::calibrate_all_reduce(parallel::make_ddp_group(devices_from(first, n), options), sizes));
    }
  }
  return out;
}

ComputeLoad::ComputeLoad(Device first, std::shared_ptr<parallel::Communicator> comm)
    : first_(first), comm_(std::move(comm)) {}

void ComputeLoad::before_single() { alone_ms_ = parallel::time_compute_workload(first_, kRepeats); }

double ComputeLoad::before_run(int devices) {
  double together_ms = 0;
  if (comm_) {
    // Every rank at once, once rank 0 has finished the single-device run; rank 0's ratio.
    comm_->barrier();
    together_ms = parallel::time_compute_workload(first_, kRepeats);
  } else {
    together_ms = parallel::time_compute_workload_together(devices_from(first_, devices), kRepeats);
  }
  return alone_ms_ > 0 ? together_ms / alone_ms_ : 1.0;
}

}  // namespace duet::apps
