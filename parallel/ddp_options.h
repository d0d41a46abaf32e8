// DistributedDataParallel's options (distributed.h), apart so that make_strategy
// (strategy.h) can take them without the whole strategy.
#pragma once

#include <chrono>

#include "duet/nn/functional.h"
#include "duet/parallel/comm/communicator.h"
#include "duet/parallel/comm/link_model.h"
#include "duet/parallel/comm/local_communicator.h"
#include "duet/parallel/loss_fn.h"

namespace duet::parallel {

struct DDPOptions {
  // Bucketed all-reduce from backward hooks; false: one all-reduce per gradient after backward
  // (for comparison: no overlap, more latency).
  bool bucketed = true;
  // ZeRO stage 1 (zero1, sharded_optimizer.h): the buckets are reduce-scattered instead of
  // all-reduced, each rank steps its chunk of every bucket with optimizer state for that chunk
  // alone, and the updated chunks are all-gathered. Needs `bucketed`; the buckets then keep
  // their first layout, which the shards and their state follow.
  bool shard_optimizer = false;
  // d2l's all-reduce (ddp-d2l, d2l_all_reduce.h), in one process only, not bucketed: once every
  // replica's backward is done, the host sums each gradient on device 0 and copies the sum back,
  // one parameter at a time, every copy a message over `link`; no communicator takes part.
  bool reduce_through_first_device = false;
  // The bucket caps in MiB, as PyTorch's: bucket 0 small, so that communication starts early
  // (its _DEFAULT_FIRST_BUCKET_BYTES, 1 MiB), and every later bucket (bucket_cap_mb, 25).
  double first_bucket_mb = 1;
  double bucket_cap_mb = 25;
  // false (exact): rank k weights its mean-loss gradient by n_k / n and the ranks SUM, so B
  // equals A equals single-device training on the same global batch, even for unequal shards.
  // true: PyTorch DDP's behaviour, the AVERAGE over ranks of per-rank mean-loss gradients,
  // which over-weights the examples of a smaller shard.
  bool mean_of_means = false;
  // Each rank's loss: the mean over its shard (scaled as above), or the sum, whose gradients
  // simply add up over the ranks (mean_of_means then divides them by the world size, as
  // PyTorch's DDP always does).
  nn::functional::Reduction loss = nn::functional::Reduction::mean;
  // The loss function, evaluated on each rank's shard (loss_fn.h); unset: cross-entropy.
  LossFn loss_fn;
  // Rank 0's buffers (BatchNorm's running statistics) to every rank before each forward, in one
  // coalesced broadcast per dtype, as PyTorch's default. false: each rank keeps its own.
  bool broadcast_buffers = true;
  // Replace every BatchNorm2d by a SyncBatchNorm2d (convert_sync_batchnorm), so that batch
  // statistics are the global batch's: then B equals single-device training for BatchNorm
  // models too. Every rank then needs at least one example per micro-batch.
  bool sync_batchnorm = false;
  // The communication hook (PyTorch's fp16_compress_hook, bf16_compress_hook): fp16 or bf16
  // all-reduce the f32 gradient buckets as 16-bit values (Communicator::all_reduce_compressed),
  // half the bytes, and the gradients come back rounded to that format. Local groups only (not
  // MPI or NCCL), and not ddp-d2l, which uses no communicator.
  GradCompression grad_compression = GradCompression::none;
  // Every this many steps, check that all replicas hold bit-identical parameters (0: never).
  int64_t check_every = 0;
  // In one process: NCCL on distinct physical GPUs; otherwise the local group, whose
  // all-reduce algorithm this chooses.
  LocalAlgorithm algorithm = LocalAlgorithm::ring;
  std::chrono::milliseconds comm_timeout = kDefaultCommTimeout;
  // In one process: an emulated interconnect for the local group (link_model.h): every message
  // between two ranks takes at least its time. Not for NCCL, whose links are real.
  LinkModel link;
};

}  // namespace duet::parallel
