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
  // Reduce-scatter then all-gather over n chunks of the flat tensor, n-1 steps each: every
  // rank sends 2(n-1)/n of the tensor, and every rank ends with bit-identical results.
  ring,
  // Reduce onto rank 0, then broadcast from it: rank 0 sends (n-1) tensors (root-bound).
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
// broadcast, reduce and all_gather move whole tensors directly between the ranks under both
// algorithms; the algorithm chooses all_reduce. bytes_sent counts what a rank's posts handed to
// other ranks: one tensor per reader.
std::vector<std::shared_ptr<Communicator>> make_local_group(const std::vector<Device>& devices,
                                                            LocalGroupOptions options = {});
std::vector<std::shared_ptr<Communicator>> make_local_group(const std::vector<Device>& devices,
                                                            LocalAlgorithm algorithm);

}  // namespace duet::parallel
