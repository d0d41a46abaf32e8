// The TF32 switch of runtime.h: one process-wide flag, read by the cuBLAS and cuDNN callers at
// every launch (so no handle needs to be revisited when it changes).
#include <atomic>

#include "duet/kernels/cuda/runtime.h"

namespace duet::cuda {
namespace {

std::atomic<bool> tf32_allowed{false};

}  // namespace

void set_allow_tf32(bool allow) { tf32_allowed.store(allow, std::memory_order_relaxed); }
bool allow_tf32() noexcept { return tf32_allowed.load(std::memory_order_relaxed); }

}  // namespace duet::cuda
