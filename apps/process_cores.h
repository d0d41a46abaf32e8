// Which cores this process's logical CPU devices may use: all of them, or under mpirun its
// share of the machine's, the same way for `duet train` and `duet compare`.
#pragma once

#include <string>

namespace duet::apps {

// mpirun (Open MPI's, or a PMI launcher's) tells its processes their rank in the environment.
bool started_by_mpirun();

struct CoreShare {
  int first = 0;  // the first core, counted among those the process may run on
  int count = 1;
};

// Without mpirun: every core the process may run on. Under mpirun: the cores divided by the
// processes on this machine (mpi_locality), local rank r taking the r-th share; if the
// launcher already bound the process to fewer cores than the machine has, those cores.
CoreShare process_cores();

// Gives `devices` logical CPU devices `cores_per_device` cores each (0: the share divided
// among them) from this process's share, and returns what to tell the user: where they run,
// or why they share one pool.
std::string place_devices(int devices, int cores_per_device, const CoreShare& share);

}  // namespace duet::apps
