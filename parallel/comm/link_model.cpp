#include "duet/parallel/comm/link_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include "duet/core/error.h"

namespace duet::parallel {
namespace {

using Clock = std::chrono::steady_clock;

Clock::duration from_ms(double ms) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(ms));
}

// The host memory that every message through host shares: each takes its turn, so concurrent
// messages divide its bandwidth.
class HostChannel {
 public:
  // The message may start at `earliest` and holds the channel for `busy`: when it is done.
  Clock::time_point reserve(Clock::time_point earliest, Clock::duration busy) {
    std::lock_guard lock(mutex_);
    free_at_ = std::max(free_at_, earliest) + busy;
    return free_at_;
  }

 private:
  std::mutex mutex_;
  Clock::time_point free_at_{};
};

HostChannel& host_channel() {
  static HostChannel channel;
  return channel;
}

// A sleeping thread wakes up to the kernel's timer slack late (50 us by default on Linux),
// which a 20 us message would more than double. The waits are this thread's own business.
void tighten_timer_slack() {
#if defined(__linux__)
  thread_local bool done = false;
  if (!done) {
    prctl(PR_SET_TIMERSLACK, 1000UL);  // 1 us
    done = true;
  }
#endif
}

// Where the figures come from: docs/parallel-strategies.md, "Emulated links".
const std::vector<LinkModel>& presets() {
  static const std::vector<LinkModel> table = {
      {.name = "none"},
      {.name = "nvlink", .alpha_us = 1, .beta_gbps = 360},
      {.name = "pcie", .alpha_us = 3, .beta_gbps = 22},
      {.name = "pcie-no-p2p", .alpha_us = 3, .beta_gbps = 22, .through_host = true},
      {.name = "10gbe", .alpha_us = 20, .beta_gbps = 1.17},
      {.name = "1gbe", .alpha_us = 50, .beta_gbps = 0.117},
  };
  return table;
}

}  // namespace

double LinkModel::message_ms(int64_t bytes) const {
  if (!emulated()) return 0;
  const double hop = alpha_us / 1e3 + static_cast<double>(bytes) / (beta_gbps * 1e6);
  return through_host ? 2 * hop : hop;
}

void LinkModel::wait_out(Clock::time_point start, int64_t bytes) const {
  if (!emulated()) return;
  Clock::time_point deadline = start + from_ms(message_ms(bytes));
  if (through_host) {
    // Both hops' latency first, then the bytes twice over the shared channel.
    const double transfer_ms = 2 * static_cast<double>(bytes) / (beta_gbps * 1e6);
    deadline = host_channel().reserve(start + from_ms(2 * alpha_us / 1e3), from_ms(transfer_ms));
  }
  if (Clock::now() >= deadline) return;
  tighten_timer_slack();
  std::this_thread::sleep_until(deadline);
}

std::string LinkModel::describe() const {
  if (!emulated()) return name + " (no emulation: memory copies between the logical devices)";
  char text[160];
  std::snprintf(text, sizeof text, "%s (emulated: %.3g us + bytes / %.3g GB/s per message%s)", name.c_str(), alpha_us,
                beta_gbps, through_host ? " and hop, two hops through one shared host channel" : "");
  return text;
}

const std::vector<std::string>& link_preset_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const LinkModel& link : presets()) out.push_back(link.name);
    return out;
  }();
  return names;
}

LinkModel link_model(const std::string& spec) {
  for (const LinkModel& link : presets()) {
    if (link.name == spec) return link;
  }
  const size_t comma = spec.find(',');
  if (comma != std::string::npos) {
    const std::string alpha_text = spec.substr(0, comma), beta_text = spec.substr(comma + 1);
    char* alpha_end = nullptr;
    char* beta_end = nullptr;
    const double alpha = std::strtod(alpha_text.c_str(), &alpha_end);
    const double beta = std::strtod(beta_text.c_str(), &beta_end);
    if (!alpha_text.empty() && !beta_text.empty() && *alpha_end == '\0' && *beta_end == '\0' && alpha >= 0 &&
        beta > 0 && std::isfinite(alpha) && std::isfinite(beta)) {
      return {.name = "custom " + spec, .alpha_us = alpha, .beta_gbps = beta};
    }
  }
  std::string choices;
  for (const std::string& name : link_preset_names()) choices += (choices.empty() ? "" : ", ") + name;
  DUET_FAIL("link '", spec, "': expected ", choices,
            " or ALPHA_US,BETA_GBPS (latency in microseconds >= 0, bandwidth in GB/s > 0), e.g. 50,0.117");
}

double emulated_ring_phase_ms(const LinkModel& link, int ranks, int64_t bytes) {
  if (ranks <= 1) return 0;
  return (ranks - 1) * link.message_ms(bytes / ranks);
}

double emulated_ring_all_reduce_ms(const LinkModel& link, int ranks, int64_t bytes) {
  return 2 * emulated_ring_phase_ms(link, ranks, bytes);
}

double emulated_naive_all_reduce_ms(const LinkModel& link, int ranks, int64_t bytes) {
  if (ranks <= 1) return 0;
  return ranks * link.message_ms(bytes);  // n-1 into rank 0 one after another, then one round out
}

}  // namespace duet::parallel
