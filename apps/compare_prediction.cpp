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
                                const std::shared_ptr<parallel::Communicator>& comm, const parallel::LinkModel& link) {
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
    links.copy = links.reduce_add = links.memory_copy = links.link;
    links.replica_threads_ms[comm->world_size()] = parallel::time_replica_threads({first});  // this rank's one
    return out;
  }
  const Device second{first.type, first.index + 1};
  parallel::DDPOptions ring, naive_ring;
  ring.link = naive_ring.link = link;
  naive_ring.algorithm = parallel::LocalAlgorithm::naive;
  const std::string over = link.emulated() ? " over " + link.name : "";
  auto named = [&](parallel::LinkFit fit) {
    fit.what += over;
    return fit;
  };
  links.copy = keep(named(parallel::calibrate_copy(second, first, sizes, 15, link)));
  links.reduce_add = keep(named(parallel::calibrate_reduce_add(second, first, sizes, 15, link)));
  links.link =
      keep(named(parallel::calibrate_ping_pong(parallel::make_ddp_group(devices_from(first, 2), ring), sizes)));
  auto without_link = [](parallel::LinkFit fit) {
    fit.what += " without the link";
    return fit;
  };
  links.memory_copy = link.emulated() ? keep(without_link(parallel::calibrate_copy(second, first, sizes))) : links.copy;
  for (int n : counts) {
    links.replica_threads_ms[n] = parallel::time_replica_threads(devices_from(first, n));
    if (n < 2) continue;
    for (const parallel::DDPOptions* options : {&ring, &naive_ring}) {
      const bool is_naive = options == &naive_ring;
      if (is_naive && !naive) continue;
      auto& measured = is_naive ? links.naive_all_reduce : links.all_reduce;
      measured[n] = keep(
          named(parallel::calibrate_all_reduce(parallel::make_ddp_group(devices_from(first, n), *options), sizes)));
      if (!link.emulated()) continue;
      parallel::DDPOptions plain = *options;
      plain.link = {};
      auto& on_cores = is_naive ? links.naive_all_reduce_on_cores : links.all_reduce_on_cores;
      on_cores[n] = keep(
          without_link(parallel::calibrate_all_reduce(parallel::make_ddp_group(devices_from(first, n), plain), sizes)));
    }
  }
  return out;
}

ComputeLoad::ComputeLoad(Device first, std::shared_ptr<parallel::Communicator> comm, std::string model, Shape example)
    : first_(first), comm_(std::move(comm)), model_(std::move(model)), example_(std::move(example)) {}

void ComputeLoad::before_single(int64_t rows) {
  single_rows_ = rows;
  single_ms_ = parallel::time_model_step(model_, example_, rows, {first_}, kRepeats);
}

double ComputeLoad::before_run(int devices, int64_t rows) {
  double together_ms = 0;
  if (comm_) {
    // Every rank at once, once rank 0 has finished the single-device run; rank 0's ratio.
    comm_->barrier();
    together_ms = parallel::time_model_step(model_, example_, rows, {first_}, kRepeats);
  } else {
    together_ms = parallel::time_model_step(model_, example_, rows, devices_from(first_, devices), kRepeats);
  }
  if (single_ms_ <= 0 || single_rows_ <= 0) return 1.0;
  // Per row, against the single-device run's batch: what a smaller shard loses (a GEMM of fewer
  // rows runs less efficiently) counts as well as what the devices lose side by side.
  return together_ms / rows / (single_ms_ / static_cast<double>(single_rows_));
}

}  // namespace duet::apps
