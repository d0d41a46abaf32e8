// The MPI communicator: one process per rank, launched by mpirun, over host (CPU) tensors.
//
// Collectives use MPI's own algorithms (MPI_Iallreduce, MPI_Ireduce_scatter_block and friends,
// on a duplicate of MPI_COMM_WORLD). stats().bytes_sent is a model, not a measurement: what the
// local group's algorithms would send (a ring all-reduce's 2(n-1)/n of the tensor, a ring
// reduce-scatter's (n-1)/n of its input, (n-1) tensors from a broadcast's root and from each
// rank of an all_gather, one tensor from each non-root of a reduce), so that `duet compare`
// shows comparable figures for both.
//
// Every wait polls the non-blocking call against the timeout. When it expires the rank prints
// the rank, the collective and the timeout to stderr and calls MPI_Abort, which ends the job
// on every rank: a dead or stuck rank never hangs the job. A wait of more than 5 s is reported
// before that, once per collective: the rank, the collective and the ranks it waits for.
#pragma once

#include <chrono>
#include <memory>

#include "duet/parallel/comm/communicator.h"

namespace duet::parallel {

struct MpiOptions {
  std::chrono::milliseconds timeout = kDefaultCommTimeout;
  Device device = cpu(0);  // this process's device for the tensors; must be a CPU device
};

// False in a build without MPI, where make_mpi_communicator throws.
bool mpi_is_built() noexcept;

// Initialises MPI if needed (MPI_Init_thread; MPI_Finalize then runs at exit) and returns this
// process's rank of MPI_COMM_WORLD. Destroy it before main returns.
std::shared_ptr<Communicator> make_mpi_communicator(MpiOptions options = {});

// This process's rank among the processes on its machine, and their number, from
// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED): what picks a process's GPU, from MPI itself rather
// than a launcher's environment variables (only OpenMPI's mpirun sets OMPI_COMM_WORLD_LOCAL_RANK).
// The first call is a collective over MPI_COMM_WORLD, so every rank must make it at the same
// point (before any collective of its own communicator is in flight); later calls return the
// same answer. Initialises MPI if needed.
struct MpiLocality {
  int local_rank = 0;
  int local_size = 1;
};
MpiLocality mpi_locality();

}  // namespace duet::parallel
