// ZeRO stage 1's optimizer (the zero1 strategy, docs/parallel-strategies.md): each rank keeps
// optimizer state for its shard of the parameters only, and steps only that shard.
//
// The shards follow the gradient buckets (grad_buckets.h), which the zero1 strategy launches as
// reduce-scatters: each bucket's flat buffer, padded with zeros to a multiple of the world size
// N, is cut into N equal chunks, and rank r owns chunk r of every bucket. So a rank's shard is
// 1/N of the flattened parameters (up to the padding), and one parameter may span two or more
// ranks' chunks. Each rank's part of a parameter in one chunk is a "piece": a flat tensor that
// the inner optimizer steps as it would a parameter. The optimizers are elementwise (SGD with
// momentum, Adam, AdamW), so stepping the pieces is stepping the parameters.
//
// A step: the pieces take the replica's current values and, as their gradients, the reduced
// chunks; the inner optimizer steps them; then every rank writes its pieces into its chunk of the
// bucket buffers and all-gathers them, so that every replica ends with all the updated
// parameters. A parameter that no rank used keeps its values and its state, as in
// single-device training.
//
// state() gathers the shards' state into the per-parameter form every other optimizer saves
// (Optimizer::state), and load_state() takes that form and keeps this rank's pieces of it: a
// checkpoint written under zero1 loads under single or ddp, and the other way round. In one
// process state() reads the other local ranks' pieces directly; across processes it is a
// collective (every rank must call it).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "duet/optim/optimizer.h"
#include "duet/parallel/grad_buckets.h"
#include "duet/parallel/strategy.h"

namespace duet::parallel {

// The part of one parameter that lies in a rank's chunk of its bucket.
struct ShardPiece {
  size_t param = 0;
  size_t bucket = 0;
  int64_t param_offset = 0;  // elements into the flattened parameter
  int64_t chunk_offset = 0;  // elements into the rank's chunk of the bucket
  int64_t numel = 0;
};

// Rank `rank`'s pieces under `layout` over `world_size` ranks, bucket by bucket, in chunk order.
std::vector<ShardPiece> shard_pieces(const BucketLayout& layout, int rank, int world_size);

class ShardedOptimizer final : public optim::Optimizer {
 public:
  // `params`: the rank's replica's; `reducer`: its reduce-scatter reducer, whose layout defines
  // the shards. make_optimizer is called once with `params` (the caller's factory, which may
  // load a checkpoint's state into what it makes): the inner optimizer is one like it over this
  // rank's pieces (make_like), and takes the rank's share of its state.
  ShardedOptimizer(std::vector<Tensor> params, std::shared_ptr<BucketReducer> reducer,
                   std::shared_ptr<Communicator> comm, const OptimizerFactory& make_optimizer);

  // After the reducer's finish(): steps this rank's pieces and all-gathers the parameters (a
  // collective). Returns nothing until every rank's shard is in this replica.
  void step() override;
  void set_lr(double lr) override;

  nn::NamedTensors state() const override;
  void load_state(const std::map<std::string, Tensor>& state) override;
  int64_t state_bytes() const override { return inner_->state_bytes(); }
  std::vector<std::string> buffer_names() const override { return inner_->buffer_names(); }
  // An unsharded optimizer of the inner one's kind.
  std::unique_ptr<Optimizer> make_like(std::vector<Tensor> params) const override;

  // In one process: every local rank's ShardedOptimizer, in rank order (this one among them),
  // whose pieces state() reads instead of communicating.
  void set_local_group(std::vector<const ShardedOptimizer*> group) { group_ = std::move(group); }
  const std::vector<ShardPiece>& pieces() const { return pieces_; }
  // Last step's all-gathers, one per bucket, with `track` unset (0).
  const std::vector<CommEvent>& gather_events() const { return gather_events_; }

 private:
  // Buffer `name` of every piece of this rank, written into its chunks of `flats` (one per bucket).
  void write_chunks(const std::string& name, const std::vector<Tensor>& flats) const;
  Tensor chunk_of(const Tensor& flat) const;         // this rank's chunk of a padded bucket buffer
  Tensor param_span(const ShardPiece& piece) const;  // the piece's elements of the replica's parameter

  std::shared_ptr<BucketReducer> reducer_;
  std::shared_ptr<Communicator> comm_;
  std::vector<ShardPiece> pieces_;
  std::vector<Tensor> piece_tensors_;  // what inner_ steps, flat, one per piece
  std::unique_ptr<Optimizer> inner_;
  std::vector<const ShardedOptimizer*> group_;
  std::vector<CommEvent> gather_events_;
};

}  // namespace duet::parallel
