#include "duet/parallel/lab/step_simulation.h"

#include <algorithm>
#include <limits>

#include "duet/core/error.h"

namespace duet::parallel {

// Backward is `backward_ms` of work. Bucket k may launch once backward has done its ready_ms
// and bucket k-1 has finished (fixed order, one collective at a time). A collective first
// waits its latency, then transfers; with collectives_use_compute, backward makes no progress
// while a transfer holds the device's cores. The loop jumps from event to event: a launch, the
// end of a latency, the end of a transfer, backward reaching the next bucket's mark or its end.
SimulatedStep simulate_ddp_step(const DdpStepInput& in) {
  const DeviceCompute& c = in.compute;
  DUET_CHECK(c.backward_ms >= 0 && c.forward_ms >= 0, "simulate_ddp_step: negative compute time");
  const size_t buckets = in.buckets.size();
  SimulatedStep out;
  out.launch_ms.assign(buckets, 0);
  out.finish_ms.assign(buckets, 0);
  const double backward_start = in.before_forward_ms + c.forward_ms + c.loss_ms;
  double t = backward_start, work = 0;  // work: backward's progress, in ms of its own compute
  double backward_end = c.backward_ms == 0 ? t : -1;
  const double last_gradient = std::min(in.last_gradient_ms.value_or(c.backward_ms), c.backward_ms);
  double last_gradient_at = last_gradient <= 0 ? t : -1;
  size_t next = 0;  // the bucket to launch next (or in flight)
  bool in_flight = false;
  double latency_end = 0, finish = 0;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (;;) {
    if (!in_flight && next < buckets && work >= std::min(in.buckets[next].ready_ms, c.backward_ms)) {
      const double bytes = static_cast<double>(in.buckets[next].bytes);
      out.launch_ms[next] = t;
      const double lasts = in.all_reduce.ms(bytes);
      const double on_cores = std::min(lasts, in.all_reduce_on_cores ? in.all_reduce_on_cores->transfer_ms(bytes)
                                                                     : in.all_reduce.transfer_ms(bytes));
      latency_end = t + lasts - on_cores;  // the wait first, then the work on the cores
      finish = t + lasts;
      in_flight = true;
    }
    if (!in_flight && next == buckets && work >= c.backward_ms) break;
    const bool comm_holds_cores = in_flight && in.collectives_use_compute && t >= latency_end;
    const double comm_event = in_flight ? (t < latency_end ? latency_end : finish) : kInf;
    if (work < c.backward_ms && !comm_holds_cores) {
      double target = c.backward_ms;
      if (!in_flight && next < buckets) target = std::min(target, in.buckets[next].ready_ms);
      if (work < last_gradient) target = std::min(target, last_gradient);
      if (t + (target - work) <= comm_event) {
        // Backward reaches its mark first: land on it exactly, so that rounding never leaves
        // it a hair short (and the loop stepping by nothing).
        t += target - work;
        work = target;
      } else {
        work += comm_event - t;
        t = comm_event;
      }
    } else {
      t = comm_event;
    }
    if (work >= c.backward_ms && backward_end < 0) backward_end = t;
    if (work >= last_gradient && last_gradient_at < 0) last_gradient_at = t;
    if (in_flight && t >= finish) {
      out.finish_ms[next] = t;
      in_flight = false;
      ++next;
    }
  }
  out.backward_end_ms = backward_end;
  double comm_end = backward_end;
  for (size_t k = 0; k < buckets; ++k) {
    const double busy_from = k == 0 ? out.launch_ms[k] : std::max(out.launch_ms[k], out.finish_ms[k - 1]);
    out.comm_busy_ms += out.finish_ms[k] - busy_from;
    out.comm_exposed_ms += std::max(0.0, out.finish_ms[k] - std::max(busy_from, backward_end));
    const double bytes = static_cast<double>(in.buckets[k].bytes);
    out.comm_bytes += bytes;
    if (out.finish_ms[k] <= last_gradient_at) out.hidden_bytes += bytes;
    comm_end = std::max(comm_end, out.finish_ms[k]);
  }
  out.step_ms = comm_end + in.after_ms + c.step_ms + in.after_step_ms;
  // What the step spent beyond its compute: the exposed collectives, the small ones around them,
  // and the backward time lost to transfers on shared cores.
  out.comm_ms = out.step_ms - (c.forward_ms + c.loss_ms + c.backward_ms + c.step_ms);
  return out;
}

SimulatedStep simulate_dp_step(const DpStepInput& in) {
  DUET_CHECK(in.devices >= 1, "simulate_dp_step: devices must be at least 1, got ", in.devices);
  const double others = in.devices - 1;
  const auto each = [&](double bytes) { return others * in.copy.ms(bytes); };  // device 0, one copy after another
  SimulatedStep out;
  double comm = 0;
  // Device 0 scatters the shards and broadcasts the parameters before any replica starts (the
  // replicas' forward begins once replicate has returned), gathers the logits once every
  // replica's forward is done, computes the loss, sends each replica its logits' gradient,
  // and after the slowest replica's backward reduces every gradient onto the master.
  if (in.devices > 1) {
    comm += each(static_cast<double>(in.input_bytes));
    // Every message after the first pays the latency again.
    comm += in.broadcast.ms(static_cast<double>(in.parameter_bytes + in.buffer_bytes)) +
            static_cast<double>(in.broadcast_messages - 1) * in.broadcast.alpha_ms;
  }
  double t = comm + in.replica.forward_ms;
  const double gather = in.devices > 1 ? each(static_cast<double>(in.output_bytes)) : 0;
  t += gather + in.loss_ms + gather;  // the gather, and its backward: the same copies the other way
  comm += 2 * gather;
  t += in.replica.backward_ms;
  out.backward_end_ms = t;
  const double reduce = in.devices > 1 ? in.reduce.ms(static_cast<double>(in.parameter_bytes)) +
                                             static_cast<double>(in.reduce_messages - 1) * in.reduce.alpha_ms
                                       : 0;
  comm += reduce;
  out.step_ms = t + reduce + in.step_ms;
  out.comm_ms = comm;
  return out;
}

}  // namespace duet::parallel
