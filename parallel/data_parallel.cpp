#include "duet/parallel/data_parallel.h"

#include <cstdint>

#include "duet/core/error.h"
#include "duet/nn/functional.h"
#include "duet/parallel/comm_ops.h"
#include "duet/parallel/replica_threads.h"

namespace duet::parallel {

DataParallel::DataParallel(std::shared_ptr<nn::Module> model, std::unique_ptr<optim::Optimizer> optimizer,
                           std::vector<Device> devices, LossReduction loss, LinkModel link, LossFn loss_fn)
    : model_(std::move(model)),
      optimizer_(std::move(optimizer)),
      devices_(std::move(devices)),
      loss_(loss),
      link_(std::move(link)),
      loss_fn_(std::move(loss_fn)) {
  DUET_CHECK(model_ && optimizer_, "DataParallel: needs a model and an optimizer");
  check_loss_reduction(loss_, "DataParallel");
  DUET_CHECK(!devices_.empty(), "DataParallel: needs at least one device");
  check_model_on(*model_, devices_[0], "DataParallel");
}

std::string DataParallel::devices() const { return device_list(devices_); }

StepResult DataParallel::train_accumulated(const std::vector<data::Batch>& micro_batches) {
  MicroBatches accumulated(micro_batches, loss_, "DataParallel");
  DeviceThreadScope on_device(devices_[0]);  // scatter, gather, loss and step run on device 0
  phases_ = {};
  comm_counter().reset();
  PhaseTimer timer(phases_, 0, devices_);
  optimizer_->zero_grad();
  // Steps 1-5 for each micro-batch: the master gradients add up across them.
  for (size_t m = 0; m < micro_batches.size(); ++m) {
    accumulated.add(forward_backward(micro_batches[m], accumulated.loss_scale(m), timer));
  }
  // 6. A plain local step on device 0. The replicas are discarded; the next step re-broadcasts.
  optimizer_->step();
  timer.lap(Phase::step);
  phases_.bytes_moved = comm_counter().bytes_moved();
  return accumulated.total();
}

StepResult DataParallel::forward_backward(const data::Batch& batch, double loss_scale, PhaseTimer& timer) {
  const Device master = devices_[0];

  // 1. Scatter the inputs: chunk k goes to devices[k], and a batch of fewer than N rows uses
  //    fewer devices. The targets are not scattered: the loss is computed on device 0 over the
  //    gathered outputs, so they only need to be there (as in PyTorch, where DataParallel
  //    scatters the forward's arguments and the loss runs outside it).
  std::vector<Tensor> inputs = scatter(batch.x.to(master), devices_, link_);
  std::vector<Device> used(devices_.begin(), devices_.begin() + static_cast<std::ptrdiff_t>(inputs.size()));
  Tensor targets = batch.y.to(master);
  timer.lap(Phase::scatter);

  // 2. Replicate. Parameters and buffers go in one broadcast, one autograd node: its backward
  //    reduce-adds all the replicas' parameter gradients onto the masters. copies[0] ARE the
  //    master tensors, so replica 0 trains the master directly, and its BatchNorm updates its
  //    running statistics in place in the master's buffers. The other replicas' buffers are
  //    fresh copies that are dropped after the step: only replica 0's running-statistics updates
  //    survive, computed over replica 0's shard alone (PyTorch's DataParallel does the same).
  std::vector<Tensor> params = model_->parameters();
  std::vector<Tensor> tensors = params;
  std::vector<size_t> buffer_slots;  // where each buffer sits in `tensors` (undefined ones: none)
  nn::NamedTensors buffers = model_->named_buffers();
  for (const auto& [name, b] : buffers) {
    buffer_slots.push_back(b.defined() ? tensors.size() : SIZE_MAX);
    if (b.defined()) tensors.push_back(b);
  }
  std::vector<std::vector<Tensor>> copies = broadcast(tensors, used, link_);
  std::vector<std::shared_ptr<nn::Module>> replicas;
  for (const std::vector<Tensor>& on_device : copies) {
    std::vector<Tensor> replica_params(on_device.begin(),
                                       on_device.begin() + static_cast<std::ptrdiff_t>(params.size()));
    std::vector<Tensor> replica_buffers;
    for (size_t slot : buffer_slots) replica_buffers.push_back(slot == SIZE_MAX ? Tensor() : on_device[slot]);
    replicas.push_back(model_->replicate(replica_params, replica_buffers));
  }
  timer.lap(Phase::broadcast);

  // 3. Parallel apply: every replica's forward on its own thread, concurrently. The graph each
  //    thread records hangs off the broadcast node, so one backward reaches all of them.
  std::vector<Tensor> outputs(used.size());
  std::vector<PhaseTimes> replica_times(used.size());  // for the trace: each device's forward
  run_on_devices(used, [&](size_t k) {
    PhaseTimer replica_timer(replica_times[k], static_cast<int>(k), {used[k]});
    outputs[k] = replicas[k]->forward(inputs[k]);
    replica_timer.lap(Phase::forward);
  });
  timer.lap_untraced(Phase::forward);
  for (const PhaseTimes& t : replica_times)
    phases_.events.insert(phases_.events.end(), t.events.begin(), t.events.end());

  // 4. Gather: the outputs concatenated on device 0, in batch order.
  Tensor output = gather(outputs, master, link_);
  timer.lap(Phase::gather);

  // 5. The loss over the global batch, on device 0, evaluated once: a mean divides by the
  //    global batch size, so the gradients are exactly single-device training's (and a sum is
  //    a sum), whatever the loss function.
  Tensor loss = training_loss(loss_fn_, loss_, output, targets);
  timer.lap(Phase::loss);
  // Backward runs each replica's part on its device's engine thread; broadcast's backward sums
  // the replicas' gradients onto the masters' .grad. Nothing overlaps this reduction.
  (loss_scale == 1 ? loss : loss * loss_scale).backward();
  timer.lap(Phase::backward);
  return step_result(loss, loss_, output, targets);
}

}  // namespace duet::parallel
