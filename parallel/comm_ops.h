// Differentiable communication ops for strategy A (DataParallel), after PyTorch's
// torch.nn.parallel Scatter, Gather, Broadcast and ReduceAddCoalesced,
// coalesced as theirs are (docs/parallel-strategies.md).
//
// Each op is ONE autograd node however many devices and tensors it spans, and its backward is
// the dual op: scatter <-> gather, broadcast <-> reduce_add. Every op adds the bytes it copies
// between devices, forward and backward, to comm_counter() (a copy within one device is a
// view and moves nothing). The backward engine runs each node on its device's thread. Every
// copy between devices, forward and backward, is one message over `link` (link_model.h; the
// default, none, adds nothing).
#pragma once

#include <vector>

#include "duet/autograd/ops.h"
#include "duet/core/tensor.h"
#include "duet/parallel/comm/comm_counter.h"
#include "duet/parallel/comm/link_model.h"

namespace duet::parallel {

// How scatter splits a batch of `batch` rows over `devices` devices: torch.chunk's rule, which
// torch.cuda.comm.scatter (hence DataParallel) uses when given no chunk sizes. Every chunk has
// ceil(batch / devices) rows except a smaller last one, so a small batch fills FEWER devices:
// 10 over 4 -> [3, 3, 3, 1], 6 over 4 -> [2, 2, 2], 5 over 4 -> [2, 2, 1], 2 over 3 -> [1, 1].
// An empty batch gives `devices` empty chunks. (Checked against PyTorch 1.13.)
using duet::chunk_sizes;  // chunk_sizes(int64_t batch, int64_t devices), ops.h

// Splits x along dim 0 into chunk_sizes(x.size(0), devices.size()) chunks; chunk k lands on
// devices[k], so a small batch returns fewer tensors than devices. A chunk bound for x's own
// device is a view of x. Backward gathers the chunks' gradients onto x's device (a chunk that
// got no gradient counts as zeros).
std::vector<Tensor> scatter(const Tensor& x, const std::vector<Device>& devices, const LinkModel& link = {});

// Concatenates `parts` (on any devices; equal dtypes and trailing sizes) along dim 0 into a new
// tensor on `target`. Backward sends each part its slice of the gradient, on the part's device.
Tensor gather(const std::vector<Tensor>& parts, Device target, const LinkModel& link = {});

// result[d][i] is tensors[i] on devices[d]; all the tensors must be on one device, the source.
// Where devices[d] is the source, result[d][i] IS tensors[i]: replica 0 reuses the master's
// tensors, so their gradients reach the master directly. Each device's copies arrive coalesced
// (transfers::moved_coalesced: one message per 10 MiB buffer, not one per tensor) as views of
// one buffer. The copies share one node whose backward reduce-adds all copies' gradients onto
// the source, again one message per buffer from each device; the engine adds that to replica
// 0's share. This is where DataParallel sums gradients onto device 0, inside backward. Copies
// of tensors that need no gradient (buffers) are plain copies.
std::vector<std::vector<Tensor>> broadcast(const std::vector<Tensor>& tensors, const std::vector<Device>& devices,
                                           const LinkModel& link = {});

// result[i] is the sum over d of per_device[d][i], on `target` (every per_device[d] has as many
// tensors, with matching shapes and dtypes); each device's tensors travel coalesced. Backward
// broadcasts result[i]'s gradient to the device of every per_device[d][i], coalesced likewise.
std::vector<Tensor> reduce_add(const std::vector<std::vector<Tensor>>& per_device, Device target,
                               const LinkModel& link = {});

}  // namespace duet::parallel
