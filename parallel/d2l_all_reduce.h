// d2l's all-reduce: the one that "Dive into Deep Learning" writes from scratch in its chapter on
// training on multiple GPUs, and ddp-d2l uses (DDPOptions::reduce_through_first_device).
//
//   def allreduce(data):
//       for i in range(1, len(data)): data[0][:] += data[i].to(data[0].device)
//       for i in range(1, len(data)): data[i][:] = data[0].to(data[i].device)
//
// called once per parameter after every replica's backward. Each copy is one message between
// two devices (transfers.h), so an emulated link charges its latency once per tensor and copy:
// 2(N-1) messages per parameter, one after another, all through device 0, nothing overlapping
// backward. That, not the arithmetic, is why it is slower than a bucketed ring all-reduce.
#pragma once

#include <vector>

#include "duet/core/tensor.h"
#include "duet/parallel/comm/link_model.h"
#include "duet/parallel/phase_times.h"

namespace duet::parallel {

// `grads[k]`: replica k's gradient of one parameter, replica 0's on the device that sums. After
// the call every one holds the sum grads[0] + grads[1] + ... (added in that order, in place in
// grads[0]). All of one shape and dtype.
void all_reduce_through_first(const std::vector<Tensor>& grads, const LinkModel& link = {});

// d2l's loop: every parameter in parameters() order, each all-reduced on its own (above), on
// the calling thread. `replicas[k]`: replica k's parameters. A parameter no replica used keeps
// an undefined .grad; one that some replica did not use counts as zeros there. Returns one
// CommEvent per parameter all-reduced ("parameter i", track 0, its bytes).
std::vector<CommEvent> d2l_all_reduce(const std::vector<std::vector<Tensor>>& replicas, const LinkModel& link = {});

}  // namespace duet::parallel
