// What ddp with gradient compression (DDPOptions::grad_compression) leaves in every .grad,
// computed on one device: the per-step check's reference for such a run (step_check.h).
//
// Each rank's gradient is computed as ddp computes it (the rank's shard by scatter's rule, its
// mean loss weighted by its share of the batch, with as many kernel threads as the rank had:
// the kernels split some sums by their threads, which moves their last bits), then the gradients are combined as
// Communicator::all_reduce_compressed combines them: each rounded to the 16-bit format, summed
// in f32 in rank order, the sum rounded again. Forward and backward run on the same kernels as
// ddp's ranks, so every .grad here is bit for bit the one ddp's all-reduce returns; a skipped
// or wrong rounding moves the gradients by whole 16-bit steps, hundreds of float ulps.
#pragma once

#include "duet/data/dataloader.h"
#include "duet/nn/module.h"
#include "duet/parallel/comm/grad_compression.h"
#include "duet/parallel/loss_fn.h"

namespace duet::parallel {

struct CompressedRanks {
  GradCompression format = GradCompression::none;
  int ranks = 1;
  // DDPOptions::mean_of_means: each rank's plain mean loss, and the sum divided by the ranks.
  bool mean_of_means = false;
  // Rank k ran on first_device + k: on the CPU, shard k is computed with as many kernel threads
  // as that device has.
  Device first_device = cpu(0);
};

// Sets every parameter's .grad to what ddp on `ranks.ranks` ranks would all-reduce for `batch`
// (mean loss; `loss_fn` unset: cross-entropy). A parameter that no shard's backward reached
// keeps no .grad, as ddp's unused parameters.
void compressed_ddp_gradients(nn::Module& model, const LossFn& loss_fn, const data::Batch& batch,
                              const CompressedRanks& ranks);

}  // namespace duet::parallel
