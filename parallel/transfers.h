// The data movement under the communication ops (comm_ops.h): plain copies between devices,
// with no autograd, each cross-device copy counted in comm_counter(). The ops' forwards and
// backwards share these, so scatter and gather's backward (and so on) move data alike. Each
// copy between two devices is one message over `link` (link_model.h): with an emulated link it
// takes at least the link's time for its bytes.
#pragma once

#include <vector>

#include "duet/core/tensor.h"
#include "duet/parallel/comm/link_model.h"

namespace duet::parallel::transfers {

// One message between devices: copies `from` into `to` (a tensor of another device, of as many
// elements), counts its bytes, and waits out what is left of the link's time for them.
void copy_between(const Tensor& from, const Tensor& to, const LinkModel& link = {});

// t on `device`: a detached alias of t when it is there already (nothing moves), else a
// contiguous copy.
Tensor moved(const Tensor& t, Device device, const LinkModel& link = {});

// A new tensor of `shape` on `target` whose rows, along dim 0, are pieces[0], pieces[1], ...
// of lengths[k] rows each; an undefined piece gives zero rows.
Tensor concat_onto(const std::vector<Tensor>& pieces, const std::vector<int64_t>& lengths, const Shape& shape,
                   DType dtype, Device target, const LinkModel& link = {});

// The sum of the defined terms (all of one shape and dtype), on `target`; undefined when no
// term is defined. Never writes into a term.
Tensor sum_onto(const std::vector<Tensor>& terms, Device target, const LinkModel& link = {});

// DataParallel moves its parameters and their gradients coalesced, as PyTorch's does
// (torch.cuda.comm's broadcast_coalesced and reduce_add_coalesced): many small tensors packed
// into one flat buffer of at most 10 MiB, one message per buffer, so that a model's many small
// tensors pay the link's latency once per buffer instead of once per tensor.
inline constexpr int64_t kCoalescedBufferBytes = int64_t{10} << 20;

// How moved_coalesced packs tensors into messages: the indices of the defined ones, grouped by
// device, dtype and whether they require grad, in order; a group is closed when the next tensor
// would take it past `buffer_bytes` (a larger tensor travels alone). Parameters travel apart
// from buffers, as in PyTorch's replicate: duet counts in-place versions per storage, so an
// update of a replica's running statistics would otherwise look like a write into its weights.
std::vector<std::vector<size_t>> coalesced_groups(const std::vector<Tensor>& tensors,
                                                  int64_t buffer_bytes = kCoalescedBufferBytes);

// Every tensor on `target`, as moved() gives it, but the ones elsewhere travel in one message per
// coalesced group (coalesced_groups): the group's tensors are packed into a flat buffer on their device, the buffer is
// copied, and each result is a view of the received buffer. Undefined tensors stay undefined.
std::vector<Tensor> moved_coalesced(const std::vector<Tensor>& tensors, Device target, const LinkModel& link = {});

}  // namespace duet::parallel::transfers
