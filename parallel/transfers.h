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

}  // namespace duet::parallel::transfers
