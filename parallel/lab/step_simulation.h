// An event simulation of one training step of strategy A (DataParallel) or B (DDP), from each
// device's compute and the links' costs (docs/parallel-strategies.md, "The cost model"). It
// replaces a closed form where the order of events decides the time: in B, each bucket's
// all-reduce starts when its last gradient is ready AND the link is free, so what overlaps
// backward and what is exposed after it comes out of the run; in A, device 0 does every copy
// itself, one after another, and each replica starts its forward when its copies have arrived.
//
// Everything is in milliseconds and bytes. A cost is affine in the bytes (alpha + bytes/beta),
// for a message and for a whole collective alike.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace duet::parallel {

struct AffineCost {
  double alpha_ms = 0;     // paid once per message or collective, whatever its size
  double ms_per_byte = 0;  // 1 / beta
  double ms(double bytes) const { return alpha_ms + bytes * ms_per_byte; }
  double transfer_ms(double bytes) const { return bytes * ms_per_byte; }
  AffineCost times(double k) const { return {alpha_ms * k, ms_per_byte * k}; }  // k of them in a row
};

// One device's compute in one step, as it runs in the strategy (already scaled to its shard).
struct DeviceCompute {
  double forward_ms = 0;
  double loss_ms = 0;
  double backward_ms = 0;
  double step_ms = 0;  // the optimizer step
};

// Strategy B on one device: its collectives run one at a time, in a fixed order.
struct DdpStepInput {
  DeviceCompute compute;
  double before_forward_ms = 0;  // collectives before forward (shard counts across processes, buffers)
  struct Bucket {
    double ready_ms = 0;  // of backward's own work: its last gradient is ready this far into backward
    int64_t bytes = 0;
  };
  std::vector<Bucket> buckets;  // launch order; the unused-parameter map is one more, ready at the end
  // When backward computes its last gradient, of its own work (its tail after it computes no
  // gradient); unset: at its end. The overlap figure counts what finished before it.
  std::optional<double> last_gradient_ms;
  AffineCost all_reduce;  // one all-reduce among all the devices, as long as it lasts
  // The part of all_reduce's transfer that runs on the device's cores (its copies and additions),
  // when that is less than all of it: over an emulated link the rest is a wait that leaves the
  // cores free. Unset: all of all_reduce's transfer.
  std::optional<AffineCost> all_reduce_on_cores;
  double after_ms = 0;       // after the last collective, before the step (copy back into .grad)
  double after_step_ms = 0;  // after the step (the global loss's all-reduce across processes)
  // CPU devices: a collective's transfer (copies, additions) runs on the device's own cores, so
  // while it transfers, backward waits for them; its latency (waiting for the other ranks) does not.
  bool collectives_use_compute = false;
};

struct SimulatedStep {
  double step_ms = 0;
  double backward_end_ms = 0;                // since the step began
  double comm_busy_ms = 0;                   // B: the collectives' time (as CommOverlap counts it)
  double comm_exposed_ms = 0;                // B: the part of it after backward ended
  double comm_ms = 0;                        // time on the critical path spent communicating, not computing
  std::vector<double> launch_ms, finish_ms;  // B: each bucket's
  // B: the bytes all-reduced, and those whose collective finished before backward computed its
  // last gradient (CommOverlap's figure; the simulated ranks are alike, so none waits for another).
  double comm_bytes = 0, hidden_bytes = 0;
  double hidden_share() const { return comm_bytes > 0 ? hidden_bytes / comm_bytes : 0; }
};

SimulatedStep simulate_ddp_step(const DdpStepInput& in);

// Strategy A over `devices` devices; device 0 holds the master model and does every transfer.
struct DpStepInput {
  int devices = 1;
  DeviceCompute replica;        // forward and backward of one replica on its shard
  double loss_ms = 0;           // on device 0, over the whole gathered batch
  double step_ms = 0;           // on device 0
  int64_t input_bytes = 0;      // of one replica's shard
  int64_t output_bytes = 0;     // one replica's logits (and, in backward, their gradient)
  int64_t parameter_bytes = 0;  // broadcast to every replica, with the buffers
  int64_t buffer_bytes = 0;
  // The messages that carry them to one replica: one per coalesced buffer (transfers.h) in
  // duet's broadcast (parameters and buffers) and gradient reduce (parameters).
  int64_t broadcast_messages = 1;
  int64_t reduce_messages = 1;
  AffineCost copy;       // one copy between device 0 and another: scatter, gather
  AffineCost broadcast;  // the parameters to all the others, whole (duet: N-1 copies; NCCL: one broadcast)
  AffineCost reduce;     // the gradients onto device 0, whole (duet: N-1 copies and adds; NCCL: one reduce)
};

SimulatedStep simulate_dp_step(const DpStepInput& in);

}  // namespace duet::parallel
