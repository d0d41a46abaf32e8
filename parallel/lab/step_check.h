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
// How far is "a few roundings"? For most models 8 ulps (kCheckUlps) holds on every CPU. A deep
// BatchNorm model (resnet18) sums tens of thousands of nearly cancelling terms per gradient, and
// how far another order of those additions moves its step depends on the CPU's BLAS kernels:
// 3 ulps on one machine, 25 on another, for a correct ddp with SyncBatchNorm. So a step beyond
// 8 ulps is measured against the order of additions' own effect on that model and CPU: single-
// device training's step on the same batch with its rows in reverse order (the same sums, added
// in another order). A run passes when its worst step is within kOrderFactor times the largest
// such distance (check_passed in experiment.h; measured ratios 0.8 to 2.9 for a correct ddp),
// while a wrong strategy lands hundreds of times further.
//
// With ddp's gradient compression (DDPOptions::grad_compression) the single-device step's
// gradients are what the compressed all-reduce returns, computed shard by shard on one device
// (compressed_gradients.h): the same 16-bit roundings of the same values, so a correct run
// still lands within a few ulps, and a missing or wrong rounding lands hundreds away.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "duet/parallel/distributed.h"
#include "duet/parallel/lab/compressed_gradients.h"
#include "duet/parallel/strategy.h"

namespace duet::parallel {

inline constexpr double kCheckUlps = 8;
inline constexpr double kOrderFactor = 4;

// A step `ulps` from single-device training's passes within kCheckUlps, or, where reversing the
// batch's rows alone moved single's step by `order_ulps` (measured: StepCheck::order_ulps), within
// kOrderFactor times that.
bool step_passes(double ulps, std::optional<double> order_ulps = std::nullopt);
// The batch with its rows in reverse order: the same examples, their sums added in another order.
data::Batch reversed_rows(const data::Batch& batch);

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
  // How far the order of additions alone moves that step: single-device training's step from the
  // same state on the same batch with its rows reversed, in float ulps from before()'s. One more
  // single-device step; unset with gradient compression, whose roundings are of each shard's sum,
  // so that other rows in a shard would round otherwise.
  std::optional<double> order_ulps();

 private:
  std::shared_ptr<nn::Module> model_;
  std::unique_ptr<SingleDevice> single_;
  LossFn loss_fn_;
  CompressedRanks compressed_;
  std::vector<std::vector<double>> expected_;  // the single-device step's parameters
  // What before() started from, for order_ulps().
  std::map<std::string, Tensor> start_state_, start_optimizer_;
  double start_lr_ = 0;
  data::Batch batch_;
};

// Every parameter's values, in parameters() order.
std::vector<std::vector<double>> parameter_values(const nn::Module& model);
// max |a - b| in units of the float spacing at max |b|, the worst over the tensors.
double max_ulps(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b);

}  // namespace duet::parallel
