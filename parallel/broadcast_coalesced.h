// One broadcast for many small tensors (DDP's constructor broadcast and its broadcast_buffers),
// as PyTorch's _broadcast_coalesced: a blocking broadcast per BatchNorm statistic would pay a
// collective's latency for every few hundred bytes.
#pragma once

#include <vector>

#include "duet/parallel/comm/communicator.h"

namespace duet::parallel {

// Copies root's `tensors` into the other ranks' with one broadcast per dtype: each dtype's
// tensors are packed into one flat tensor on comm's device, broadcast, and unpacked. Every
// rank passes tensors of the same dtypes and shapes, in the same order; undefined ones are
// skipped. Writes without autograd (they may be parameters).
void broadcast_coalesced(Communicator& comm, const std::vector<Tensor>& tensors, int root);

}  // namespace duet::parallel
