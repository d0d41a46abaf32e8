#include "duet/parallel/lab/cost_model.h"

#include <algorithm>
#include <numeric>

#include "duet/core/error.h"

namespace duet::parallel {
namespace {

double latency_ms(const Link& link) { return link.latency_us / 1e3; }
double transfer_ms(const Link& link, double bytes) { return bytes / (link.bandwidth_gbps * 1e9) * 1e3; }
double message_ms(const Link& link, double bytes) { return latency_ms(link) + transfer_ms(link, bytes); }

// Device 0 exchanges one share with each of the other n-1 devices, one after another.
double root_bound_ms(const Link& link, int n, double bytes_per_device) {
  return (n - 1) * message_ms(link, bytes_per_device);
}

double ring_all_reduce_ms(const Link& link, int n, double bytes) {
  if (n == 1) return 0;
  return 2.0 * (n - 1) * message_ms(link, bytes / n);
}

}  // namespace

Link nvlink() { return {"NVLink", 10, 350}; }
Link pcie() { return {"PCIe", 15, 24}; }

Prediction predict(StrategyKind strategy, int devices, const Link& link, const StepProfile& p) {
  DUET_CHECK(devices >= 1, "predict: devices must be at least 1, got ", devices);
  const int n = devices;
  const double params = static_cast<double>(p.parameter_bytes);
  Prediction out;
  if (strategy == StrategyKind::single) {
    out.compute_ms = p.forward_ms + p.loss_ms + p.backward_ms + p.step_ms;
  } else if (strategy == StrategyKind::dp) {
    // Scatter the inputs, broadcast parameters and buffers, forward, gather the outputs; loss
    // and backward, whose broadcast node reduce-adds every replica's gradients onto device 0
    // after the replicas' backward; then the step on device 0.
    out.compute_ms = (p.forward_ms + p.backward_ms) / n + p.loss_ms + p.step_ms;
    if (n > 1) {
      out.comm_ms = root_bound_ms(link, n, static_cast<double>(p.input_bytes) / n) +
                    root_bound_ms(link, n, params + static_cast<double>(p.buffer_bytes)) +
                    root_bound_ms(link, n, static_cast<double>(p.output_bytes) / n) + root_bound_ms(link, n, params);
    }
  } else if (is_ddp(strategy)) {
    out.compute_ms = (p.forward_ms + p.loss_ms + p.backward_ms) / n + p.step_ms;
    if (n > 1) {
      const double buffers = p.buffer_bytes > 0 ? root_bound_ms(link, n, static_cast<double>(p.buffer_bytes)) : 0;
      double exposed = 0;
      if (strategy == StrategyKind::ddp_d2l) {
        // After backward, each parameter tensor alone through device 0: n-1 whole copies in,
        // each added there, and n-1 back out, one after another; every copy pays the latency.
        exposed =
            2.0 * (n - 1) * (static_cast<double>(p.parameter_count) * latency_ms(link) + transfer_ms(link, params));
      } else if (strategy != StrategyKind::ddp_unbucketed) {
        // Buckets all-reduce while backward runs; the last one is ready only when backward
        // ends, so at least it is exposed, and all of them are once they outlast backward.
        // Ring: 2(n-1) messages of 1/n of the bucket. Naive: reduce onto rank 0, then
        // broadcast from it, (n-1) whole buckets each way through rank 0.
        double total = 0, last = 0;
        for (int64_t b : p.bucket_bytes) {
          const double bytes = static_cast<double>(p.gradient_wire_bytes(b));
          last = strategy == StrategyKind::ddp ? ring_all_reduce_ms(link, n, bytes) : 2 * root_bound_ms(link, n, bytes);
          total += last;
        }
        exposed = std::max(last, total - p.backward_ms / n);
      } else {
        // One all-reduce per parameter tensor after backward: nothing overlaps, and every
        // tensor pays the latency.
        exposed = 2.0 * (n - 1) *
                  (static_cast<double>(p.parameter_count) * latency_ms(link) +
                   transfer_ms(link, static_cast<double>(p.gradient_wire_bytes(p.parameter_bytes)) / n));
      }
      out.comm_ms = buffers + exposed;
    }
  } else if (strategy == StrategyKind::zero1) {
    // ddp's bucketed ring all-reduce split in its two halves: the reduce-scatters overlap
    // backward as ddp's buckets do, the step runs on 1/n of the parameters, and the all-gather
    // of every bucket follows it, exposed.
    out.compute_ms = (p.forward_ms + p.loss_ms + p.backward_ms + p.step_ms) / n;
    if (n > 1) {
      const double buffers = p.buffer_bytes > 0 ? root_bound_ms(link, n, static_cast<double>(p.buffer_bytes)) : 0;
      double total = 0, last = 0;
      for (int64_t b : p.bucket_bytes) {
        last = ring_all_reduce_ms(link, n, static_cast<double>(b)) / 2;
        total += last;
      }
      out.comm_ms = buffers + std::max(last, total - p.backward_ms / n) + total;
    }
  } else {
    DUET_FAIL("predict: no closed form for ", strategy);
  }
  return out;
}

}  // namespace duet::parallel
