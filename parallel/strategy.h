// Strategy: how one training step runs over one or more devices. The step loop (Trainer)
// and `duet train`/`duet compare` only see this interface.
//
// This file has the single-device strategy and make_strategy, which builds any strategy by
// kind (strategy_kind.h); DataParallel (A, data_parallel.h), DistributedDataParallel (B, distributed.h) and
// GraphedSingleDevice (graphed_single_device.h) implement the same interface.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "duet/data/dataloader.h"
#include "duet/nn/functional.h"
#include "duet/nn/module.h"
#include "duet/optim/optimizer.h"
#include "duet/optim/schedule.h"
#include "duet/parallel/comm/communicator.h"
#include "duet/parallel/ddp_options.h"
#include "duet/parallel/loss_fn.h"
#include "duet/parallel/phase_times.h"
#include "duet/parallel/strategy_kind.h"

namespace duet::parallel {

// Every strategy trains with its loss (StrategyOptions::loss_fn, cross-entropy by default),
// averaged over the global batch (mean) or summed (sum). The data-parallel strategies reproduce
// either exactly.
using LossReduction = nn::functional::Reduction;  // (also spelled out in ddp_options.h)

struct StepResult {
  double loss = 0;  // mean loss over the batch, whichever the reduction
  // Examples whose argmax matched their label: counted only where the targets are class labels
  // (i64 [N] against outputs [N, C], are_class_labels); unset for any other targets
  // (regression, multi-label), where it would mean nothing.
  std::optional<int64_t> correct;
  int64_t count = 0;  // examples (rows) in the batch
};

// A strategy is what a learning-rate schedule drives (optim::Schedulable): set_lr reaches every
// replica's optimizer.
class Strategy : public optim::Schedulable {
 public:
  virtual ~Strategy() = default;
  // forward, loss, backward and optimizer step on one global batch.
  virtual StepResult train_step(const data::Batch& batch) = 0;
  // Gradient accumulation: forward and backward on each micro-batch in turn, the gradients
  // adding up, then one optimizer step. Each micro-batch's mean loss is weighted by its share
  // of all their examples, so the step equals train_step on their concatenation. The result
  // covers all of them. This default takes one micro-batch only.
  virtual StepResult train_accumulated(const std::vector<data::Batch>& micro_batches);
  // The model whose parameters are the result (device 0's for the parallel strategies).
  virtual nn::Module& model() = 0;
  // Rank 0's optimizer (device 0's): its state and hyperparameters as they are, for reading or
  // checkpointing. Not the way to change a hyperparameter: under ddp every replica has an
  // optimizer of its own, and changing rank 0's alone desynchronises them. Use set_lr.
  virtual optim::Optimizer& optimizer() = 0;
  // Sets the learning rate of every replica's optimizer this process holds (across processes,
  // the caller's rank's: every rank calls it, as every rank steps).
  void set_lr(double lr) override = 0;
  virtual Device device() const = 0;        // where model() lives
  virtual std::string devices() const = 0;  // "[cpu:0]", "[cuda:0, cuda:1]"
  // Where the last train_step's time went, phase by phase, and the bytes it moved.
  virtual const PhaseTimes& last_phases() const = 0;
};

// Plain training on one device.
class SingleDevice final : public Strategy {
 public:
  SingleDevice(std::shared_ptr<nn::Module> model, std::unique_ptr<optim::Optimizer> optimizer, Device device,
               LossReduction loss = LossReduction::mean, LossFn loss_fn = {});
  StepResult train_step(const data::Batch& batch) override { return train_accumulated({batch}); }
  StepResult train_accumulated(const std::vector<data::Batch>& micro_batches) override;
  nn::Module& model() override { return *model_; }
  optim::Optimizer& optimizer() override { return *optimizer_; }
  void set_lr(double lr) override { optimizer_->set_lr(lr); }
  Device device() const override { return device_; }
  std::string devices() const override { return "[" + device_.str() + "]"; }
  const PhaseTimes& last_phases() const override { return phases_; }

 private:
  std::shared_ptr<nn::Module> model_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  Device device_;
  LossReduction loss_;
  LossFn loss_fn_;
  PhaseTimes phases_;
};

// Gradient accumulation's bookkeeping, for a strategy that computes each micro-batch's loss
// over the whole micro-batch (single, dp): the factor on micro-batch `index`'s loss (its share
// of all the examples for a mean loss, 1 for a sum), and the results added up.
class MicroBatches {
 public:
  MicroBatches(const std::vector<data::Batch>& micro_batches, LossReduction loss, const char* who);
  double loss_scale(size_t index) const;
  void add(const StepResult& micro_batch);  // a micro-batch's result, its loss the mean over it
  StepResult total() const;

 private:
  std::vector<int64_t> rows_;
  int64_t total_rows_ = 0;
  LossReduction loss_;
  double loss_sum_ = 0;
  StepResult total_;
};

// Makes an optimizer over a replica's parameters; the data-parallel strategies call it once per
// replica they hold.
using OptimizerFactory = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor> params)>;

struct StrategyOptions {
  // single: record the step once as a CUDA graph and replay it (GraphedSingleDevice: one CUDA
  // device, an optimizer whose step is replayable).
  bool cuda_graph = false;
  // ddp: this process's rank of a multi-process group (MPI, or NCCL bootstrapped over MPI);
  // `devices` must then be {comm->device()}. Null: every rank in this process, one per device.
  std::shared_ptr<Communicator> comm;
  // The loss: loss_fn(output, target), the mean over the rows it is given (loss_fn.h); unset,
  // cross-entropy against i64 class labels. The targets may be of any dtype and shape whose
  // dim 0 is the batch. Every strategy trains single-device training's step with it.
  LossFn loss_fn;
  // Mean over the global batch, or sum (loss_fn's mean times the rows).
  LossReduction loss = LossReduction::mean;
  // ddp: bucket caps, SyncBatchNorm, buffer broadcast, comm timeout. make_strategy sets its
  // `loss` and `loss_fn` from the ones above, `bucketed` and `algorithm` from the strategy's
  // kind, and `link` from the one below.
  DDPOptions ddp;
  // dp and ddp in one process: an emulated interconnect between the devices (link_model.h).
  LinkModel link;
};

// Builds a strategy of `kind` over `devices`; `model` must live on devices[0], and single uses
// devices[0] only. Throws naming the strategy and the reason when the kind, the devices or the
// options do not fit together.
std::unique_ptr<Strategy> make_strategy(StrategyKind kind, std::shared_ptr<nn::Module> model,
                                        const OptimizerFactory& make_optimizer, const std::vector<Device>& devices,
                                        const StrategyOptions& options = {});

// Throws unless every parameter of `model` lives on `device`; `who` names the strategy.
void check_model_on(const nn::Module& model, Device device, const char* who);
// Throws unless `loss` is mean or sum; `who` names the strategy.
void check_loss_reduction(LossReduction loss, const char* who);
// The mean loss over `count` examples from a mean- or sum-reduced loss tensor.
double mean_loss(const Tensor& loss, LossReduction reduction, int64_t count);

// A step's result from its loss, output and targets; the correct count only where the targets
// are class labels (are_class_labels). That count is queued before the loss is read, so a GPU
// is waited for once, not twice.
StepResult step_result(const Tensor& loss, LossReduction reduction, const Tensor& output, const Tensor& target);

// Number of rows of `logits` [N, C] whose argmax equals `labels` [N].
int64_t count_correct(const Tensor& logits, const Tensor& labels);
// The same count as an i64 scalar tensor on the logits' device, without waiting for it.
Tensor correct_predictions(const Tensor& logits, const Tensor& labels);

// Test accuracy of `model` over `loader`, in eval mode and without recording a graph.
double evaluate(nn::Module& model, data::DataLoader& loader, Device device);

}  // namespace duet::parallel
