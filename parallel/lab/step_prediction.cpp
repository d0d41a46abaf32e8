#include "duet/parallel/lab/step_prediction.h"

#include <algorithm>

#include "duet/core/error.h"

namespace duet::parallel {
namespace {

// NCCL over one GPU's links (docs/parallel-strategies.md, "GPU link presets", for the figures
// and where they come from). alpha is per ring step, beta the bus bandwidth.
Links gpu_links(std::string name, double alpha_us, double bus_gbps) {
  Links links;
  links.name = std::move(name);
  links.link = {alpha_us / 1e3, 1.0 / (bus_gbps * 1e6)};
  links.copy = links.link;        // scatter and gather: device-to-device copies over the same link
  links.memory_copy = {};         // the copy back into .grad: not on the CPU's critical path here
  links.reduce_add = links.link;  // unused: dp_collectives
  links.dp_collectives = true;
  links.host_time_recurs = false;
  return links;
}

// Ring all-reduce among n: 2(n-1) steps, each a message of 1/n of the data.
AffineCost ring(const AffineCost& link, int n) {
  return {2.0 * (n - 1) * link.alpha_ms, 2.0 * (n - 1) / n * link.ms_per_byte};
}

int64_t rows_per_device(int64_t batch, int devices) { return (batch + devices - 1) / devices; }

// ddp-d2l's all-reduce of one tensor (d2l_all_reduce.h): n-1 copies onto device 0, each added
// there, then n-1 copies back, one after another.
AffineCost through_first_device(const Links& links, int n) {
  return {(n - 1) * (links.reduce_add.alpha_ms + links.copy.alpha_ms),
          (n - 1) * (links.reduce_add.ms_per_byte + links.copy.ms_per_byte)};
}

}  // namespace

AffineCost Links::all_reduce_at(int devices, bool naive) const {
  const std::map<int, AffineCost>& measured = naive ? naive_all_reduce : all_reduce;
  if (auto it = measured.find(devices); it != measured.end()) return it->second;
  // Reduce onto rank 0, broadcast back: 2(n-1) whole messages through rank 0.
  if (naive) return link.times(2.0 * (devices - 1));
  return ring(link, devices);
}

std::optional<AffineCost> Links::all_reduce_on_cores_at(int devices, bool naive) const {
  const std::map<int, AffineCost>& measured = naive ? naive_all_reduce_on_cores : all_reduce_on_cores;
  if (auto it = measured.find(devices); it != measured.end()) return it->second;
  return std::nullopt;
}

Links nvlink_links() { return gpu_links("NVLink (NCCL)", 1.0, 360); }
Links pcie_links() { return gpu_links("PCIe (NCCL)", 3.0, 22); }

namespace {

// zero1 (sharded_optimizer.h) as ddp's bucketed step with: each bucket reduce-scattered, the ring
// all-reduce's first half (n-1 messages of 1/n of it), overlapping backward as ddp's buckets
// (the map of used parameters is still all-reduced: its second half after it); the optimizer
// step on 1/n of the parameters; and after it the all-gather of every bucket of zero1's plan
// (the first one, which it keeps), the ring's second half, which nothing overlaps, then the
// copy of the gathered parameters out of the buckets.
void shard_the_step(DdpStepInput& in, const StepProfile& p, const Links& links, int n) {
  in.all_reduce = in.all_reduce.times(0.5);
  if (in.all_reduce_on_cores) in.all_reduce_on_cores = in.all_reduce_on_cores->times(0.5);
  in.after_ms += in.all_reduce.ms(4.0 * static_cast<double>(p.parameter_sizes.size()));  // the map, f32 per parameter
  in.compute.step_ms /= n;
  for (int64_t bytes : p.bucket_bytes) in.after_step_ms += in.all_reduce.ms(static_cast<double>(bytes));
  if (links.collectives_use_compute)
    in.after_step_ms += links.memory_copy.transfer_ms(static_cast<double>(p.parameter_bytes));
}

SimulatedStep simulate(StrategyKind strategy, int devices, int64_t batch_size, const StepProfile& p,
                       const Links& links) {
  DUET_CHECK(devices >= 1, "predict_step: devices must be at least 1, got ", devices);
  DUET_CHECK(p.batch_size > 0, "predict_step: the profile has no measured batch size");
  DUET_CHECK(batch_size > 0, "predict_step: batch_size must be positive, got ", batch_size);
  const int n = strategy == StrategyKind::single ? 1 : devices;
  // Compute scales with the rows a device works on (the slowest device holds the largest shard),
  // and with how much slower n devices compute at once than the single-device run did.
  const double contention = strategy != StrategyKind::single ? links.compute_slowdown : 1.0;
  const double share =
      contention * static_cast<double>(rows_per_device(batch_size, n)) / static_cast<double>(p.batch_size);
  const double whole = static_cast<double>(batch_size) / static_cast<double>(p.batch_size);
  const DeviceCompute device{.forward_ms = p.forward_ms * share,
                             .loss_ms = p.loss_ms * share,
                             .backward_ms = p.backward_ms * share,
                             .step_ms = p.step_ms};
  if (strategy == StrategyKind::single || (n == 1 && strategy == StrategyKind::dp)) {
    // dp on one device is single-device training with a loss over the whole (same) batch.
    SimulatedStep out;
    out.step_ms = (p.forward_ms + p.loss_ms + p.backward_ms) * whole * contention + p.step_ms;
    out.backward_end_ms = out.step_ms - p.step_ms;
    return out;
  }
  const int64_t image_bytes = p.input_bytes / p.batch_size, logit_bytes = p.output_bytes / p.batch_size;
  const int64_t rows = rows_per_device(batch_size, n);
  if (strategy == StrategyKind::dp) {
    DpStepInput in{.devices = n,
                   .replica = device,
                   .loss_ms = p.loss_ms * whole,
                   .step_ms = p.step_ms,
                   .input_bytes = rows * image_bytes,
                   .output_bytes = rows * logit_bytes,
                   .parameter_bytes = p.parameter_bytes,
                   .buffer_bytes = p.buffer_bytes,
                   .copy = links.copy,
                   .broadcast = {},
                   .reduce = {}};
    if (links.dp_collectives) {
      // NCCL's broadcast and reduce pipeline the data around a ring: n-1 hops of latency, the
      // data over the link once (bus bandwidth factor 1, nccl-tests' PERFORMANCE.md).
      in.broadcast = {(n - 1) * links.link.alpha_ms, links.link.ms_per_byte};
      in.reduce = in.broadcast;
    } else {
      in.broadcast = links.copy.times(n - 1);
      in.reduce = links.reduce_add.times(n - 1);
      // duet's broadcast and reduce coalesce the tensors, one message per buffer and device.
      in.broadcast_messages = p.dp_broadcast_messages;
      in.reduce_messages = p.dp_reduce_messages;
    }
    return simulate_dp_step(in);
  }
  DUET_CHECK(is_distributed(strategy), "predict_step: no simulation of ", strategy);
  DUET_CHECK(p.grad_ready_ms.size() == p.parameter_sizes.size(),
             "predict_step: the profile has no per-parameter gradient times for ", strategy);
  DdpStepInput in;
  in.compute = device;
  in.all_reduce = links.all_reduce_at(n, strategy == StrategyKind::ddp_naive);
  in.all_reduce_on_cores = links.all_reduce_on_cores_at(n, strategy == StrategyKind::ddp_naive);
  if (strategy == StrategyKind::zero1) shard_the_step(in, p, links, n);
  in.collectives_use_compute = links.collectives_use_compute;
  const double map_bytes = 4.0 * static_cast<double>(p.parameter_sizes.size());  // f32 per parameter
  if (strategy == StrategyKind::ddp_d2l) {
    // After backward, each parameter alone through device 0, first parameter first; the sums
    // land in .grad directly (no copy back, no map of used parameters).
    in.all_reduce = through_first_device(links, n);
    in.all_reduce_on_cores.reset();
    for (int64_t bytes : p.parameter_sizes) in.buckets.push_back({device.backward_ms, bytes});
    in.last_gradient_ms = device.backward_ms;
  } else if (strategy == StrategyKind::ddp_unbucketed) {
    // After backward: the map of used parameters, then each parameter alone, last first.
    in.buckets.push_back({device.backward_ms, static_cast<int64_t>(map_bytes)});
    for (size_t i = p.parameter_sizes.size(); i-- > 0;)
      in.buckets.push_back({device.backward_ms, p.gradient_wire_bytes(p.parameter_sizes[i])});
  } else {
    DUET_CHECK(!p.arrival_buckets.empty(), "predict_step: the profile has no bucket plan for ", strategy);
    double last_gradient = 0;
    for (const std::vector<size_t>& bucket : p.arrival_buckets) {
      DdpStepInput::Bucket b;
      for (size_t i : bucket) {
        b.ready_ms = std::max(b.ready_ms, p.grad_ready_ms[i] * share);
        b.bytes += p.gradient_wire_bytes(p.parameter_sizes[i]);
      }
      last_gradient = std::max(last_gradient, b.ready_ms);
      in.buckets.push_back(b);
    }
    in.last_gradient_ms = last_gradient;
    in.buckets.push_back({device.backward_ms, static_cast<int64_t>(map_bytes)});  // after the buckets
  }
  // On CPU devices the reduced buckets are copied back into .grad at memory speed (zero1 copies
  // the gathered parameters out of its buckets instead: shard_the_step).
  if (links.collectives_use_compute && strategy != StrategyKind::ddp_d2l && strategy != StrategyKind::zero1)
    in.after_ms = links.memory_copy.transfer_ms(static_cast<double>(p.parameter_bytes));
  // Rank 0's buffers to every rank before forward (BatchNorm models).
  if (p.buffer_bytes > 0) in.before_forward_ms += (n - 1) * links.link.ms(static_cast<double>(p.buffer_bytes));
  if (links.multi_process) {
    in.before_forward_ms += in.all_reduce.ms(8);  // the shard sizes
    in.after_step_ms += in.all_reduce.ms(24);     // the global loss, correct count and count
  }
  return simulate_ddp_step(in);
}

}  // namespace

SimulatedStep predict_step(StrategyKind strategy, int devices, int64_t batch_size, const StepProfile& p,
                           const Links& links) {
  SimulatedStep out = simulate(strategy, devices, batch_size, p, links);
  // dp and ddp start a thread per local device for every step, and join them at its end;
  // ddp-d2l twice, for backward and for the step after its all-reduce.
  if (auto threads = links.replica_threads_ms.find(devices);
      strategy != StrategyKind::single && threads != links.replica_threads_ms.end()) {
    out.step_ms += threads->second * (strategy == StrategyKind::ddp_d2l ? 2 : 1);
  }
  if (auto overhead = links.step_overhead_ms.find({strategy, devices}); overhead != links.step_overhead_ms.end())
    out.step_ms += overhead->second;
  // The single run's time outside its phases (the loader's batches, the host between phases)
  // recurs in every strategy's step, in proportion to the batch the loader assembles.
  if (links.host_time_recurs) {
    out.step_ms += p.other_ms * static_cast<double>(batch_size) / static_cast<double>(p.batch_size);
  }
  return out;
}

}  // namespace duet::parallel
