// Single-device training on a GPU with the step recorded once as a CUDA graph and replayed:
// the hundred-odd kernel launches of a small model's step become one (kernels/cuda/graph.h).
// The math is SingleDevice's, kernel for kernel, so the parameters it ends with are the same.
//
// How a step runs:
//   1. The first `warmup_steps` batches train eagerly (through SingleDevice): cuDNN picks its
//      algorithms, the optimizer creates its buffers and the allocator's cache fills.
//   2. The next batch's step is recorded into a graph that reads the images and labels from
//      two tensors of its own and writes the loss and the number of correct predictions to two
//      more. Nothing runs while recording; the graph's first replay trains on that batch.
//   3. Each later batch is copied into the graph's inputs, the graph replayed, and the loss and
//      count read back. A batch smaller than the largest seen (an epoch's short last batch)
//      trains eagerly; a new learning rate, another batch shape, or parameters that moved
//      (Module::to) record the step again. (Optimizer state loaded in between is not noticed:
//      build a new GraphedSingleDevice after Optimizer::load_state.)
// Labels are checked on the host before each replay, since the graph cannot stop to report a
// bad one (for the default cross-entropy; a loss_fn's targets are its own business). Models that draw random numbers
// (dropout) and optimizers whose step is not replayable (Adam) are refused with an error.
#pragma once

#include <memory>
#include <vector>

#include "duet/kernels/cuda/graph.h"
#include "duet/parallel/strategy.h"

namespace duet::parallel {

class GraphedSingleDevice final : public Strategy {
 public:
  static constexpr int kWarmupSteps = 3;
  // `device` must be a CUDA device and `optimizer` replayable (SGD); warmup_steps >= 1, so the
  // recorded step finds every optimizer buffer already made.
  GraphedSingleDevice(std::shared_ptr<nn::Module> model, std::unique_ptr<optim::Optimizer> optimizer, Device device,
                      LossReduction loss = LossReduction::mean, int warmup_steps = kWarmupSteps, LossFn loss_fn = {});
  StepResult train_step(const data::Batch& batch) override;
  nn::Module& model() override { return eager_.model(); }
  optim::Optimizer& optimizer() override { return eager_.optimizer(); }
  void set_lr(double lr) override { eager_.set_lr(lr); }  // the next replay records the step again
  Device device() const override { return eager_.device(); }
  std::string devices() const override { return eager_.devices(); }
  // An eager step's phases as SingleDevice reports them. A replay is one launch whose phases
  // cannot be told apart: its whole time, copies in and results out included, is under step.
  const PhaseTimes& last_phases() const override { return phases_; }
  // Steps trained by replaying the graph, and how many times the step was recorded.
  int64_t replays() const { return replays_; }
  int recordings() const { return recordings_; }

 private:
  bool fits(const data::Batch& batch) const;
  std::vector<const void*> parameter_addresses();
  void record(const data::Batch& batch);

  SingleDevice eager_;
  LossReduction loss_;
  LossFn loss_fn_;
  int warmup_left_;
  PhaseTimes phases_;
  std::unique_ptr<cuda::CapturedWork> graph_;
  Tensor x_, y_;                 // the graph's inputs
  Tensor loss_value_, correct_;  // its outputs (correct_: for class labels only)
  std::vector<Tensor> grads_;    // the gradients it writes, one per parameter (undefined: none)
  int64_t classes_ = 0;
  double recorded_lr_ = 0;
  std::vector<const void*> recorded_addresses_;
  int64_t largest_batch_ = 0;          // rows of the largest batch seen
  bool first_replay_pending_ = false;  // the recording's step() counted a step not yet replayed
  int64_t replays_ = 0;
  int recordings_ = 0;
};

}  // namespace duet::parallel
