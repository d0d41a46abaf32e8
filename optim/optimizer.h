// Optimizer: updates parameters from their .grad. Per-parameter state (momentum buffers,
// Adam moments, the count of updates) is kept by parameter index, and saved in checkpoints by
// state()/load_state().
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "duet/core/tensor.h"
#include "duet/nn/module.h"
#include "duet/optim/schedule.h"

namespace duet::optim {

class Optimizer : public Schedulable {
 public:
  Optimizer(std::vector<Tensor> params, double lr);
  virtual ~Optimizer() = default;

  // Applies one update to every parameter that has a gradient. No communication: in both
  // data-parallel strategies, gradients are already reduced when step() runs.
  virtual void step() = 0;
  void zero_grad();  // drops every parameter's .grad

  // True when, once its buffers exist, step() queues the same kernels with the same arguments
  // every time (for a given lr), so a CUDA graph may record it once and replay it
  // (parallel::GraphedSingleDevice). Adam's is not: its bias corrections come from each
  // parameter's step count, computed on the host.
  virtual bool replayable() const { return false; }
  // Counts a step that a replay performed without calling step(): the parameters whose .grad
  // is set are the ones it updated.
  void count_replayed_step();

  double lr() const { return lr_; }
  void set_lr(double lr) override;
  const std::vector<Tensor>& params() const { return params_; }

  // Steps taken, and updates parameter `index` received: a step skips a parameter without a
  // gradient, whose count then stays (PyTorch's per-parameter state['step']).
  int64_t steps() const { return step_count_; }
  int64_t updates(size_t index) const { return updates_.at(index); }

  // The state as named tensors, for checkpoints: "step" (steps taken), and per parameter
  // "<index>.<buffer>" and "<index>.step" (its updates, for a parameter updated at least once).
  // A sharded optimizer (parallel/sharded_optimizer.h) gathers its shards' state into this
  // same per-parameter form, and loads it.
  virtual nn::NamedTensors state() const;
  // Restores what state() saved; throws naming the first tensor that does not fit. A state
  // without per-parameter counts (checkpoints written before duet kept them) gives each
  // parameter that has buffers the global "step" and the others 0: exact when every parameter
  // had a gradient at every step, as in `duet train`.
  virtual void load_state(const std::map<std::string, Tensor>& state);

  // The bytes of state this optimizer holds on its device (momentum buffers, Adam moments):
  // what `duet compare` reports per device, and what a sharded optimizer divides.
  virtual int64_t state_bytes() const;
  // The named buffers every updated parameter has (state()'s "<index>.<buffer>"), in name order.
  virtual std::vector<std::string> buffer_names() const = 0;
  // A fresh optimizer of the same kind and hyperparameters (its learning rate included) over
  // other tensors, without state: a sharded optimizer steps its shard with one.
  virtual std::unique_ptr<Optimizer> make_like(std::vector<Tensor> params) const = 0;

 protected:
  // The named state tensor of parameter `index`, created as zeros like the parameter.
  Tensor& buffer(size_t index, const std::string& name);
  bool has_buffer(size_t index, const std::string& name) const { return buffers_[index].count(name) > 0; }
  // Counts one update of parameter `index`; returns its updates, this one included (Adam's t).
  int64_t count_update(size_t index) { return ++updates_[index]; }
  int64_t step_count_ = 0;

 private:
  std::vector<Tensor> params_;
  double lr_;
  std::vector<std::map<std::string, Tensor>> buffers_;
  std::vector<int64_t> updates_;
};

}  // namespace duet::optim
