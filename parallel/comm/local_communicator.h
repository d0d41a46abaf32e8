// Local communicators: N in-process ranks, one per logical device (cpu:0..N-1, later cuda:i),
// each used from its own thread. Data moves only with kernels::copy and kernels::binary on the
// tensors' own devices, through a shared rendezvous (parallel/comm/local_rendezvous.h).
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "duet/parallel/comm/communicator.h"
#include "duet/parallel/comm/link_model.h"

namespace duet::parallel {

enum class LocalAlgorithm : uint8_t {
  // A ring over n chunks of the flat tensor, each step one chunk to the right neighbour:
  // reduce_scatter and all_gather are one phase of n-1 steps each, in which every rank sends
  // (n-1)/n of the buffer; all_reduce is the two phases in a row (2(n-1)/n of the tensor), and
  // every rank ends with bit-identical results.
  ring,
  // Root-bound: all_reduce reduces onto rank 0, then broadcasts from it (rank 0 sends n-1
  // tensors); reduce_scatter reduces onto rank 0, which hands each rank its chunk; all_gather
  // has every rank read every other rank's tensor directly.
  naive,
};

struct LocalGroupOptions {
  LocalAlgorithm algorithm = LocalAlgorithm::ring;
  // A collective that waits longer than this for another rank throws a duet::Error naming the
  // collective, the rank and the ranks that never arrived, and fails the group.
  std::chrono::milliseconds timeout = kDefaultCommTimeout;
  // An emulated interconnect: every message between two ranks takes at least its time.
  LinkModel link;
};

// One connected communicator per device, rank i on devices[i]; the devices must be distinct.
// broadcast and reduce move whole tensors directly between the ranks under both algorithms;
// the algorithm chooses all_reduce, reduce_scatter and all_gather. bytes_sent counts what other
// ranks copied from this rank's posts (each reader's part of them).
std::vector<std::shared_ptr<Communicator>> make_local_group(const std::vector<Device>& devices,
                                                            LocalGroupOptions options = {});
std::vector<std::shared_ptr<Communicator>> make_local_group(const std::vector<Device>& devices,
                                                            LocalAlgorithm algorithm);

}  // namespace duet::parallel
