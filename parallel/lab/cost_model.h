// The alpha-beta cost model (docs/parallel-strategies.md, "The cost model"): what one training step of each strategy
// should cost on N GPUs, from the measured single-device compute and the bytes each strategy
// moves. A message of b bytes over a link costs alpha + b / beta (latency plus transfer).
//   - Root-bound transfers (DataParallel's scatter, broadcast, gather and gradient reduce):
//     device 0 sends or receives every other device's share one after another: (N-1) messages.
//   - Ring all-reduce (DDP): 2(N-1) steps of 1/N of the tensor each, so every device sends
//     2(N-1)/N of it: 2(N-1) alpha + 2(N-1)/N b / beta, whatever N. The naive all-reduce is
//     root-bound: a reduce and a broadcast, 2(N-1) whole tensors through device 0. d2l's
//     (ddp-d2l) is the same per parameter tensor, after backward: 2(N-1) latencies per tensor.
// Compute divides by N where it runs on every device (forward, backward), and does not where it
// runs on device 0 alone (A's loss and optimizer step; B's step runs everywhere at once).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "duet/parallel/strategy_kind.h"

namespace duet::parallel {

struct Link {
  std::string name;
  double latency_us;      // alpha, per message
  double bandwidth_gbps;  // beta, in GB/s (1e9 bytes per second) per direction
};

// Typical figures for one GPU's link: NVLink 4 (H100/H200 SXM: about 350 GB/s of all-reduce
// bus bandwidth in NCCL's tests) and PCIe 4.0 x16 (about 24 GB/s achieved). Assumptions, not
// measurements: see docs/parallel-strategies.md.
Link nvlink();
Link pcie();

// What was measured on one device, per step, and the sizes that decide the traffic.
struct StepProfile {
  double forward_ms = 0;
  double loss_ms = 0;
  double backward_ms = 0;
  double step_ms = 0;
  int64_t parameter_bytes = 0;
  int64_t buffer_bytes = 0;           // BatchNorm statistics and the like
  int64_t input_bytes = 0;            // of one global batch
  int64_t output_bytes = 0;           // the logits of one global batch
  std::vector<int64_t> bucket_bytes;  // DDP's buckets, in launch order
  int64_t parameter_count = 0;        // tensors: one all-reduce each when unbucketed
  int64_t buffer_count = 0;           // tensors (dp broadcasts them with the parameters)
  int64_t dp_broadcast_messages = 1;  // dp's parameters and buffers, coalesced (transfers.h)
  int64_t dp_reduce_messages = 1;     // dp's gradients, coalesced
  // For the event simulation (step_prediction.h), from the single-device run:
  int64_t batch_size = 0;  // the rows its compute times are for
  double other_ms = 0;     // its step's time outside the phases: waiting for the loader, the host between phases
  std::vector<int64_t> parameter_sizes;              // bytes of each parameter, parameters() order
  std::vector<double> grad_ready_ms;                 // when each one's gradient was ready, ms into backward
  std::vector<std::vector<size_t>> arrival_buckets;  // DDP's buckets as rebuilt in arrival order
  // DDP's gradient bytes on the wire per byte of gradient: 0.5 under fp16 or bf16 compression
  // (DDPOptions::grad_compression), whose buckets travel as 16-bit values.
  double gradient_wire_factor = 1;
  int64_t gradient_wire_bytes(int64_t gradient_bytes) const {
    return static_cast<int64_t>(static_cast<double>(gradient_bytes) * gradient_wire_factor);
  }
};

struct Prediction {
  double compute_ms = 0;  // the compute on the critical path
  double comm_ms = 0;     // the communication on it (what overlaps backward is not counted)
  double step_ms() const { return compute_ms + comm_ms; }
};

// Throws for devices < 1.
Prediction predict(StrategyKind strategy, int devices, const Link& link, const StepProfile& profile);

}  // namespace duet::parallel
