// The loss every strategy trains with: cross-entropy against class labels by default, or any
// function of a batch's output and targets (StrategyOptions::loss_fn), such as an MSE against
// f32 regression targets.
#pragma once

#include <functional>

#include "duet/core/tensor.h"
#include "duet/nn/functional.h"

namespace duet::parallel {

// loss_fn(output, target): the MEAN loss over the rows it is given, dim 0 of both being the
// batch. The data-parallel strategies call it on the global batch (dp) or on each shard (ddp,
// weighted by the shard's share of the global batch), so a mean is what makes every strategy's
// step single-device training's.
using LossFn = std::function<Tensor(const Tensor& output, const Tensor& target)>;

// The loss to backward for one batch: loss_fn's mean (times the rows, for a sum reduction), or
// without a loss_fn cross-entropy reduced by `reduction`.
Tensor training_loss(const LossFn& loss_fn, nn::functional::Reduction reduction, const Tensor& output,
                     const Tensor& target);

// Whether `target` holds class labels of `output`'s rows: integers [N] against scores [N, C].
// Only then does a correct count (argmax == label) mean something.
bool are_class_labels(const Tensor& output, const Tensor& target);

}  // namespace duet::parallel
