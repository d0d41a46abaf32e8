// Link calibration: measures, instead of assuming, what a message costs on the links a run uses
// (docs/parallel-strategies.md, "The cost model"). Each measurement times one operation over a
// sweep of sizes (4 B to 4 MiB), takes the median of several repeats per size, and fits
// time = alpha + bytes / beta to them, weighting each size by its own time so that the small
// messages decide alpha and the large ones beta.
//
//   - copies: dp's transfers between device 0 and another (a copy, and a copy plus an add onto
//     device 0, as its gradient reduce does), on device 0's thread;
//   - ping-pong: a message from rank 0 to rank 1 and back through a communicator (a broadcast
//     from each in turn), half the round trip: the link's alpha and beta;
//   - all-reduce: one all-reduce of the whole group at each size: the collective's own alpha and
//     beta for this number of ranks, what DDP's buckets pay.
// The communicator versions are one rank's part: every rank of the group calls them at once
// (in this process on one thread per rank, or one per process under mpirun).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "duet/core/device.h"
#include "duet/core/shape.h"
#include "duet/parallel/comm/communicator.h"
#include "duet/parallel/comm/link_model.h"
#include "duet/parallel/lab/step_simulation.h"

namespace duet::parallel {

struct TimedSize {
  int64_t bytes = 0;
  double ms = 0;  // the median over the repeats
};

struct LinkFit {
  std::string what;  // "local ring all-reduce, 2 ranks", "MPI ping-pong", "copy cpu:0 -> cpu:1"
  double alpha_us = 0;
  double beta_gbps = 0;  // 1e9 bytes per second
  std::vector<TimedSize> samples;
  AffineCost cost() const { return {alpha_us / 1e3, 1.0 / (beta_gbps * 1e6)}; }
};

// Fits ms = alpha + bytes / beta to `samples` by least squares on the relative error. Throws
// unless there are two sizes or more; alpha is at least 0 and beta positive and finite (a
// sweep whose time does not grow with size gets the largest beta the samples allow).
LinkFit fit_link(std::string what, const std::vector<TimedSize>& samples);

// 4 B, 16 B, ... 4 MiB.
std::vector<int64_t> calibration_sizes();

// One rank's part of a sweep; every rank of the group calls it at the same time with the same
// arguments. Rank 0's times are the ones to fit (the others' come back too).
std::vector<TimedSize> time_all_reduce(Communicator& comm, const std::vector<int64_t>& sizes, int repeats);
// Rank 0 to rank 1 and back (every other rank only takes part in the broadcasts); one way.
std::vector<TimedSize> time_ping_pong(Communicator& comm, const std::vector<int64_t>& sizes, int repeats);

// For a group whose ranks all live in this process: runs each rank's part on its own thread
// (working for its device) and fits rank 0's times.
LinkFit calibrate_all_reduce(const std::vector<std::shared_ptr<Communicator>>& group, const std::vector<int64_t>& sizes,
                             int repeats = 15);
LinkFit calibrate_ping_pong(const std::vector<std::shared_ptr<Communicator>>& group, const std::vector<int64_t>& sizes,
                            int repeats = 15);

// dp's transfers from `to`'s thread: a copy from `from` onto `to`, and (reduce_add) a copy of
// `from`'s tensor added to one on `to`, as DataParallel's scatter/gather and gradient reduce do,
// each copy a message over `link` (link_model.h).
LinkFit calibrate_copy(Device from, Device to, const std::vector<int64_t>& sizes, int repeats = 15,
                       const LinkModel& link = {});
LinkFit calibrate_reduce_add(Device from, Device to, const std::vector<int64_t>& sizes, int repeats = 15,
                             const LinkModel& link = {});

// The median time of starting and joining one thread per device with nothing to do
// (run_on_devices, as dp and ddp do every step), from the calling thread (ms).
double time_replica_threads(const std::vector<Device>& devices, int repeats = 15);

// The model's own step without the optimizer (forward, cross-entropy loss and backward) on
// `rows` random examples of `example` shape (one example's, e.g. {1, 28, 28}), on every
// device's thread at once: the slowest device's median time (ms). One device: alone. Timed
// alone and then together at a run's shard size, it says what the cores give side by side for
// the work the run really does (GEMMs and convolutions contend little; a memory-bound pass
// would contend much more), and what else the machine was running at the time.
double time_model_step(const std::string& model, const Shape& example, int64_t rows, const std::vector<Device>& devices,
                       int repeats = 9);

}  // namespace duet::parallel
