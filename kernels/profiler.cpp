#include "duet/kernels/profiler.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>

namespace duet::kernels::profiler {
namespace {

std::atomic<bool> g_enabled{false};
thread_local int t_depth = 0;  // kernels open on this thread

struct Totals {
  std::mutex mutex;
  std::map<std::string, OpTime> by_op;
};
Totals& totals() {
  static Totals instance;
  return instance;
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void sort_longest_first(std::vector<OpTime>& ops) {
  std::sort(ops.begin(), ops.end(), [](const OpTime& x, const OpTime& y) {
    return x.seconds != y.seconds ? x.seconds > y.seconds : x.op < y.op;
  });
}

}  // namespace

void set_enabled(bool enabled) { g_enabled.store(enabled, std::memory_order_relaxed); }

bool enabled() noexcept { return g_enabled.load(std::memory_order_relaxed); }

std::vector<OpTime> take() {
  Totals& t = totals();
  std::vector<OpTime> ops;
  {
    std::lock_guard lock(t.mutex);
    for (auto& [name, time] : t.by_op) ops.push_back(time);
    t.by_op.clear();
  }
  sort_longest_first(ops);
  return ops;
}

void accumulate(std::vector<OpTime>& a, const std::vector<OpTime>& b) {
  for (const OpTime& time : b) {
    auto it = std::find_if(a.begin(), a.end(), [&](const OpTime& x) { return x.op == time.op; });
    if (it == a.end()) {
      a.push_back(time);
    } else {
      it->calls += time.calls;
      it->seconds += time.seconds;
    }
  }
  sort_longest_first(a);
}

Scope::Scope(const char* op, const char* variant) noexcept {
  if (!enabled()) return;
  counted_ = true;
  if (t_depth++ > 0) return;  // inside another kernel: its time, not ours
  op_ = op;
  variant_ = variant;
  start_ns_ = now_ns();
}

Scope::~Scope() {
  if (!counted_) return;
  --t_depth;
  if (!op_) return;
  const double seconds = static_cast<double>(now_ns() - start_ns_) * 1e-9;
  std::string name = variant_ ? std::string(op_) + " " + variant_ : std::string(op_);
  Totals& t = totals();
  std::lock_guard lock(t.mutex);
  OpTime& time = t.by_op[name];
  time.op = name;
  ++time.calls;
  time.seconds += seconds;
}

}  // namespace duet::kernels::profiler
