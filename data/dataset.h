// An in-memory dataset of inputs and targets: what the DataLoader batches.
#pragma once

#include <cstdint>

#include "duet/core/tensor.h"

namespace duet::data {

struct TensorDataset {
  // The inputs: u8 images [N, C, H, W] (scaled by 1/255 when batched), or f32/f64 [N, ...] of
  // any shape, on the CPU.
  Tensor images;
  // The targets, one row per input: i64 class labels [N] (what cross-entropy takes), or any
  // integer or floating-point tensor [N, ...] (f32 regression targets [N, K], multi-label 0/1
  // rows [N, C]), on the CPU. Batches hold integer targets as i64 and floating ones as f32.
  Tensor labels;
  int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
};

}  // namespace duet::data
