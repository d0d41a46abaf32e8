// The per-step equivalence check behind `duet compare`'s "check ulps" column.
//
// Why per step: parameters after N steps say little. Training amplifies every rounding, so a
// correct strategy can end 1e-2 away from single-device training after 100 steps, while a
// wrong one (a missing shard, a wrong scale, a stale bucket) may end no further. But from
// IDENTICAL parameters, one step of a correct strategy lands within a few float roundings of
// single-device training's step on the same global batch, and a wrong one lands far away at
// once. So before every step the check copies the strategy's parameters, buffers and optimizer
// state into a single-device model, steps it on the same batch, and after the strategy's step
// measures the distance, in float ulps.
//
// The distance of one parameter tensor is max |p - p_single| over its elements, in units of
// the float spacing at its largest |p_single| (an element near zero would otherwise turn a
// rounding of its update into millions of its own ulps). A step's is the worst tensor's.
//
// With ddp's gradient compression (DDPOptions::grad_compression) the single-device step's
// gradients are what the compressed all-reduce returns, computed shard by shard on one device
// (compressed_gradients.h): the same 16-bit roundings of the same values, so a correct run
// still lands within a few ulps, and a missing or wrong rounding lands hundreds away.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "duet/parallel/distributed.h"
#include "duet/parallel/lab/compressed_gradients.h"
#include "duet/parallel/strategy.h"

namespace duet::parallel {

class StepCheck {
 public:
  // A single-device copy of the strategy's model: `model` is a fresh instance of its class (the
  // check loads the strategy's state into it before every step), moved here to `device`, and
  // trained with `loss_fn` (unset: cross-entropy), the strategy's loss. `compressed`: the ddp
  // run's gradient compression and ranks, which the single-device step then reproduces.
  StepCheck(std::shared_ptr<nn::Module> model, const OptimizerFactory& make_optimizer, Device device,
            LossFn loss_fn = {}, CompressedRanks compressed = {});
  // The same for the bundled model named `model`.
  StepCheck(const std::string& model, const OptimizerFactory& make_optimizer, Device device);

  // Before the strategy's step: single-device training's step on `batch` from the strategy's
  // parameters, buffers, optimizer state and learning rate (rank 0's).
  void before(Strategy& strategy, const data::Batch& batch);
  // After it: how far the strategy's parameters landed from that step's, in float ulps.
  double after(Strategy& strategy) const;

 private:
  std::shared_ptr<nn::Module> model_;
  std::unique_ptr<SingleDevice> single_;
  LossFn loss_fn_;
  CompressedRanks compressed_;
  std::vector<std::vector<double>> expected_;  // the single-device step's parameters
};

// Every parameter's values, in parameters() order.
std::vector<std::vector<double>> parameter_values(const nn::Module& model);
// max |a - b| in units of the float spacing at max |b|, the worst over the tensors.
double max_ulps(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b);

}  // namespace duet::parallel
