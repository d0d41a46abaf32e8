// What the CPU NN kernels share: the loop grain. Their layouts are kernels/nn_layouts.h's, shared
// with the CUDA kernels; their operands were checked by kernels/nn_dispatch.cpp.
#pragma once

#include <cstdint>

#include "duet/kernels/nn_layouts.h"

namespace duet::kernels::cpu {

// Work items (multiply-adds, elements) per parallel chunk below which a thread hand-off costs
// more than it saves.
inline constexpr int64_t kNnGrainWork = 32768;

// Chunks of `items`, each costing `work_per_item`, so that one chunk holds about kNnGrainWork.
inline int64_t grain_for(int64_t work_per_item) {
  return work_per_item >= kNnGrainWork ? 1 : kNnGrainWork / (work_per_item > 0 ? work_per_item : 1);
}

}  // namespace duet::kernels::cpu
