// An in-memory labelled dataset: what the DataLoader batches.
#pragma once

#include <cstdint>

#include "duet/core/tensor.h"

namespace duet::data {

struct TensorDataset {
  Tensor images;  // u8 [N, C, H, W] (or f32, f64), on the CPU
  Tensor labels;  // i64 [N]
  int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
};

}  // namespace duet::data
