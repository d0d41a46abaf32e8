// Strategy A, DataParallel: PyTorch's torch.nn.DataParallel, one process driving N devices
// from device 0 (docs/parallel-strategies.md). Every step:
//   1. scatter   the batch's inputs along dim 0, one chunk per device (fewer for a small batch);
//   2. broadcast the master parameters and buffers from devices[0] to every used device, as
//                ONE autograd node, and build a replica per device from the copies;
//   3. forward   each replica on its own thread;
//   4. gather    the outputs onto devices[0];
//   5. loss      on devices[0] over the whole batch, and backward: the gradients flow back
//                through gather, the replicas and broadcast, whose backward reduce-adds every
//                replica's gradients onto the master parameters, inside backward;
//   6. step      a plain local optimizer step on devices[0]. No communication: the next step
//                broadcasts the updated parameters again.
// The optimizer does not all-reduce anything (the seed article's claim is MXNet's, not PyTorch's).
#pragma once

#include <memory>
#include <vector>

#include "duet/parallel/comm/link_model.h"
#include "duet/parallel/phase_times.h"
#include "duet/parallel/strategy.h"

namespace duet::parallel {

class DataParallel final : public Strategy {
 public:
  // `model` lives on devices[0] and `optimizer` updates its (the master) parameters. Every copy
  // between devices (scatter, broadcast, gather, the gradients' reduce) is a message over `link`.
  DataParallel(std::shared_ptr<nn::Module> model, std::unique_ptr<optim::Optimizer> optimizer,
               std::vector<Device> devices, LossReduction loss = LossReduction::mean, LinkModel link = {},
               LossFn loss_fn = {});

  StepResult train_step(const data::Batch& batch) override { return train_accumulated({batch}); }
  // Steps 1-5 on each micro-batch, the master gradients adding up, then one step.
  StepResult train_accumulated(const std::vector<data::Batch>& micro_batches) override;
  nn::Module& model() override { return *model_; }
  optim::Optimizer& optimizer() override { return *optimizer_; }
  void set_lr(double lr) override { optimizer_->set_lr(lr); }  // the one optimizer, on device 0
  Device device() const override { return devices_[0]; }
  std::string devices() const override;

  // The last step's time per phase and the bytes comm_ops moved (scatter, broadcast, gather
  // and their backward). Backward includes the gradients' reduce-add.
  const PhaseTimes& last_phases() const override { return phases_; }

 private:
  // Steps 1-5 on one micro-batch, its loss times loss_scale.
  StepResult forward_backward(const data::Batch& batch, double loss_scale, PhaseTimer& timer);

  std::shared_ptr<nn::Module> model_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::vector<Device> devices_;
  LossReduction loss_;
  LinkModel link_;
  LossFn loss_fn_;
  PhaseTimes phases_;
};

}  // namespace duet::parallel
