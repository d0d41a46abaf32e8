// The MPI communicator: one process per rank, launched by mpirun, over host (CPU) tensors.
//
// Collectives use MPI's own algorithms (MPI_Iallreduce and friends on a duplicate of
// MPI_COMM_WORLD). stats().bytes_sent is a model, not a measurement: what the local group's
// algorithms would send (a ring all-reduce's 2(n-1)/n of the tensor, (n-1) tensors from a
// broadcast's root and from each rank of an all_gather, one tensor from each non-root of a
// reduce), so that `duet compare` shows comparable figures for both.
//
// Every wait polls the non-blocking call against the timeout. When it expires the rank prints
// the rank, the collective and the timeout to stderr and calls MPI_Abort, which ends the job
// on every rank: a dead or stuck rank never hangs the job.
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

}  // namespace duet::parallel
