// Out-of-range class labels found by cross-entropy's kernel on a GPU, reported on the host
// without a synchronisation of their own. Checking labels by waiting for the device's answer
// cost every eager training step a stream synchronisation; instead the kernel writes the first
// bad label of a call into page-locked host memory (cross_entropy.cu), and the host raises the
// CPU's error for it the next time it waits for that device anyway: a copy to the host (a loss's
// item()) or synchronize(). So a training step with a bad label throws, with the CPU's message,
// when it reads its loss; the step's update has been queued by then, with the bad rows' loss
// NaN and their gradient zero (the kernels never read outside a row).
#pragma once

#include "duet/core/device.h"

namespace duet::cuda {

// Throws "cross_entropy_forward: target[i] = v is out of range for C classes (expected 0 <=
// target < C)" for the first bad label a cross-entropy on `device` found since the last report,
// and forgets it. Call only after waiting for the device's stream; does nothing when no bad
// label was found (or no cross-entropy ran).
void raise_bad_label(Device device);

}  // namespace duet::cuda
