// The NCCL communicator: one rank per physical GPU, over CUDA tensors (docs/parallel-strategies.md).
//
// Two ways to build a group:
//   - one process driving N GPUs, one thread per rank: make_nccl_group(devices);
//   - one process per GPU (mpirun): make_nccl_communicator(bootstrap, device), where rank 0's
//     ncclUniqueId travels to the other ranks through a CPU communicator (the MPI one).
// NCCL refuses two ranks on one GPU, so virtual devices (DUET_CUDA_VIRTUAL_DEVICES) need the
// local communicator instead; make_nccl_group says so.
//
// Streams: each rank has its own non-blocking communication stream. A collective first waits
// (on the GPU, through an event) for the work already queued on the rank's compute stream,
// cuda::stream(device), then runs on the communication stream, so an async all-reduce overlaps
// the compute queued after it (strategy B's buckets overlap the rest of backward).
//
// Work::wait() blocks the calling thread until the collective has finished on the GPU (that
// is where the timeout and NCCL's asynchronous errors are checked) and orders the compute stream
// after it. After wait() the result may be used by anything: later kernels on the compute
// stream, and host reads, which copy through the compute stream anyway. The tensors stay alive
// until the collective has finished, even if the Work is dropped without wait().
//
// stats().bytes_sent is the same model as the MPI communicator's (a ring all-reduce's
// 2(n-1)/n of the tensor, a reduce-scatter's (n-1)/n of its input, and so on), not a
// measurement of NCCL's own algorithms (ncclAllReduce, ncclReduceScatter, ncclAllGather, ...).
//
// Errors: every NCCL call is checked. A wait that outlasts the timeout, an asynchronous NCCL
// error, or abort() on any rank aborts this rank's NCCL communicator (ncclCommAbort) and fails
// the group: in one process every rank's pending and later collectives throw a duet::Error
// naming the rank and the reason; across processes the bootstrap communicator's abort() runs
// (MPI ends the job). Creating the group waits for NCCL up to init_timeout, a limit of its own
// (setting up NCCL's transports takes seconds where a collective takes microseconds), then throws
// "... timed out after N ms: a rank never joined"; across processes it first aborts through the
// bootstrap, since the other ranks are blocked in NCCL too. make_nccl_group then connects every
// rank with one warm-up all-reduce, under init_timeout too: NCCL connects ranks lazily, inside
// the host call of their first collective, where a rank whose peer had already failed would block
// past every timeout.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "duet/parallel/comm/communicator.h"

namespace duet::parallel {

struct NcclOptions {
  std::chrono::milliseconds timeout = kDefaultCommTimeout;       // each collective's wait
  std::chrono::milliseconds init_timeout = kDefaultCommTimeout;  // creating and connecting the group
};

// False in a build without CUDA or without NCCL, where the factories below throw.
bool nccl_is_built() noexcept;

// One connected communicator per device, rank i on devices[i] (distinct CUDA devices on
// distinct physical GPUs; one device is a one-rank group). Each rank must then be driven from
// its own thread.
std::vector<std::shared_ptr<Communicator>> make_nccl_group(const std::vector<Device>& devices,
                                                           NcclOptions options = {});

// This process's rank of a group with one process per GPU: collective over `bootstrap` (a CPU
// communicator, typically make_mpi_communicator()), whose rank and world size it takes. The
// bootstrap is kept, so that a failure here can fail the whole job through its abort(). Refuses
// virtual devices with make_nccl_group's message.
std::shared_ptr<Communicator> make_nccl_communicator(std::shared_ptr<Communicator> bootstrap, Device device,
                                                     NcclOptions options = {});
// The same on the GPU of this process's local rank: its rank among the processes on its machine,
// from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) (mpi_locality(), a collective the first time).
std::shared_ptr<Communicator> make_nccl_communicator(std::shared_ptr<Communicator> bootstrap, NcclOptions options = {});

}  // namespace duet::parallel
