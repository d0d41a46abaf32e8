// A kernel-level profiler, for `duet train --profile` and for anyone asking where a step's
// time goes. Off by default, and then a kernel pays one relaxed atomic load. On, each kernel
// reads the steady clock at entry and exit on its calling thread and adds the interval to its
// op's total. Only the outermost kernel of a thread counts (matmul's internal copy is matmul's
// time). A CPU kernel's time includes the pool threads it waits for; a CUDA kernel's is the
// host time to launch it, since the GPU runs it later.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace duet::kernels::profiler {

struct OpTime {
  std::string op;  // "matmul", "sigmoid", "sigmoid backward", "conv2d_forward", ...
  int64_t calls = 0;
  double seconds = 0;
};

void set_enabled(bool enabled);
bool enabled() noexcept;
// The totals since the last take(), longest first; the totals start again from zero.
std::vector<OpTime> take();
// Adds b's totals into a, op by op (a stays sorted longest first).
void accumulate(std::vector<OpTime>& a, const std::vector<OpTime>& b);

// Times the enclosing scope as `op` (and `variant`, e.g. "backward") when profiling is on.
class Scope {
 public:
  explicit Scope(const char* op, const char* variant = nullptr) noexcept;
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  bool counted_ = false;      // profiling was on: this scope counts in the thread's depth
  const char* op_ = nullptr;  // null: not timing (profiling off, or nested in another kernel)
  const char* variant_ = nullptr;
  int64_t start_ns_ = 0;
};

}  // namespace duet::kernels::profiler
