#include "compare_prediction.h"

#include <algorithm>

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
    // Rank 0 computes alone, then every rank at once, as in the ddp run (rank 0's ratio).
    comm->barrier();
    const double alone = comm->rank() == 0 ? parallel::time_compute_workload(first) : 1;
    comm->barrier();
    const double together = parallel::time_compute_workload(first);
    links.compute_slowdown[comm->world_size()] = std::max(1.0, together / alone);
    return out;
  }
  const Device second{first.type, first.index + 1};
  links.copy = keep(parallel::calibrate_copy(second, first, sizes));
  links.reduce_add = keep(parallel::calibrate_reduce_add(second, first, sizes));
  links.link = keep(parallel::calibrate_ping_pong(parallel::make_ddp_group(devices_from(first, 2), {}), sizes));
  for (int n : counts) {
    if (n < 2) continue;
    links.compute_slowdown[n] = parallel::measure_compute_slowdown(devices_from(first, n));
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

}  // namespace duet::apps
