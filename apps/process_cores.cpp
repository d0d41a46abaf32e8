#include "process_cores.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "duet/core/cpu_affinity.h"
#include "duet/core/placement.h"
#include "duet/parallel/comm/mpi_communicator.h"

namespace duet::apps {

bool started_by_mpirun() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"}) {
    if (std::getenv(name)) return true;
  }
  return false;
}

CoreShare process_cores() {
  const int available = static_cast<int>(available_cores().size());
  const int machine = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (!started_by_mpirun() || available < machine) return {0, std::max(1, available)};
  const parallel::MpiLocality local = parallel::mpi_locality();
  const int sharing = std::max(1, local.local_size);
  const int count = std::max(1, available / sharing);
  // More processes than cores: they overlap rather than run out of cores.
  return {std::min(local.local_rank * count, available - count), count};
}

std::string place_devices(int devices, int cores_per_device, const CoreShare& share) {
  const int k = cores_per_device > 0 ? cores_per_device : std::max(1, share.count / devices);
  const CpuPlacement placement = place_cpu_devices(devices, k, share.first);
  if (!placement.pinned()) return placement.note;
  std::string where;
  for (size_t d = 0; d < placement.cores.size(); ++d) {
    std::string cores;
    for (int c : placement.cores[d]) cores += (cores.empty() ? "" : ",") + std::to_string(c);
    where += (where.empty() ? "" : ", ") + ("cpu:" + std::to_string(d) + " on core " + cores);
  }
  return std::to_string(k) + " core(s) per device, pinned: " + where;
}

}  // namespace duet::apps
