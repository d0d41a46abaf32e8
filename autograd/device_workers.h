// The backward engine's device threads: one persistent worker per device (cpu:i, cuda:i),
// each with its own ready queue, so that the parts of one graph on different devices run
// backward concurrently (as PyTorch's engine does). Engine-internal.
#pragma once

#include <cstdint>
#include <functional>

#include "duet/core/device.h"

namespace duet::autograd {

// Work for a device's worker. It must not throw: the engine catches inside its jobs.
using DeviceJob = std::function<void()>;

// Queues `job` on `device`'s worker, starting that worker on first use. Among queued jobs the
// highest `priority` runs first (the engine passes a node's sequence number: newest first).
// Workers live until the process exits; they are then stopped and joined.
void submit_to_device(Device device, uint64_t priority, DeviceJob job);

}  // namespace duet::autograd
