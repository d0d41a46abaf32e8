#include "duet/parallel/graphed_single_device.h"

#include <algorithm>

#include "duet/autograd/factory.h"
#include "duet/autograd/grad_mode.h"
#include "duet/nn/functional.h"

namespace duet::parallel {
namespace {

// The check cross_entropy makes on the device, made on the host before the replay: the device's
// check reports a bad label only once the step has run (kernels/cuda/bad_label.h), and the
// refused step must leave the parameters as they were, as on the CPU.
void check_labels(const Tensor& labels, int64_t classes) {
  DUET_CHECK(labels.dtype() == DType::i64, "GraphedSingleDevice: labels must be i64, got ", labels.describe());
  const Tensor host = labels.device().is_cpu() ? labels.contiguous() : labels.to(cpu()).contiguous();
  const int64_t* values = host.data<int64_t>();
  const int64_t ignore_index = nn::functional::CrossEntropyOptions{}.ignore_index;  // the loss's default
  for (int64_t i = 0; i < host.numel(); ++i) {
    DUET_CHECK((values[i] >= 0 && values[i] < classes) || values[i] == ignore_index, "cross_entropy: target[", i,
               "] = ", values[i], " is out of range for ", classes, " classes (expected 0 <= target < ", classes,
               ", or ignore_index ", ignore_index, ")");
  }
}

bool same_layout(const Tensor& a, const Tensor& b) { return a.sizes() == b.sizes() && a.dtype() == b.dtype(); }

}  // namespace

GraphedSingleDevice::GraphedSingleDevice(std::shared_ptr<nn::Module> model, std::unique_ptr<optim::Optimizer> optimizer,
                                         Device device, LossReduction loss, int warmup_steps, LossFn loss_fn)
    : eager_(std::move(model), std::move(optimizer), device, loss, loss_fn),
      loss_(loss),
      loss_fn_(std::move(loss_fn)),
      warmup_left_(warmup_steps) {
  DUET_CHECK(device.is_cuda(), "GraphedSingleDevice: CUDA graphs need a CUDA device, got ", device);
  DUET_CHECK(eager_.optimizer().replayable(),
             "GraphedSingleDevice: this optimizer's step cannot be replayed from a CUDA graph (its arguments "
             "change every step); use SGD, or train without CUDA graphs");
  DUET_CHECK(warmup_steps >= 1,
             "GraphedSingleDevice: warmup_steps must be >= 1 (the recorded step must find the "
             "optimizer's buffers made), got ",
             warmup_steps);
}

bool GraphedSingleDevice::fits(const data::Batch& batch) const {
  return graph_ && same_layout(batch.x, x_) && same_layout(batch.y, y_);
}

// Where the graph reads and writes the parameters. Module::to moves their data (and the
// buffers' with them) to new memory inside the same tensors, so the optimizer's parameters show
// the new addresses while the graph would go on writing the old, freed memory; load_state_dict
// copies into them in place, which the graph then reads.
std::vector<const void*> GraphedSingleDevice::parameter_addresses() {
  std::vector<const void*> out;
  for (const Tensor& p : optimizer().params()) out.push_back(p.data_ptr());
  return out;
}

StepResult GraphedSingleDevice::train_step(const data::Batch& batch) {
  // The graph is made for the largest batch: a smaller one (an epoch's last) trains eagerly.
  largest_batch_ = std::max(largest_batch_, batch.y.size(0));
  if (warmup_left_ > 0 || batch.y.size(0) < largest_batch_) {
    warmup_left_ = std::max(warmup_left_ - 1, 0);
    StepResult result = eager_.train_step(batch);
    phases_ = eager_.last_phases();
    return result;
  }
  phases_ = {};
  PhaseTimer timer(phases_, 0, {device()});
  if (!fits(batch) || optimizer().lr() != recorded_lr_ || parameter_addresses() != recorded_addresses_) record(batch);
  if (!loss_fn_) check_labels(batch.y, classes_);
  x_.copy_(batch.x);
  y_.copy_(batch.y);
  graph_->replay();
  // An eager step in between may have replaced the parameters' .grad; show the graph's again.
  const std::vector<Tensor>& params = optimizer().params();
  for (size_t i = 0; i < params.size(); ++i) params[i].set_grad(grads_[i]);
  // The recording called step() once, for the step its first replay performs (which may come
  // a call later, when this batch's labels were refused). The parameters with a .grad now are
  // the ones the replay updated.
  if (!first_replay_pending_) optimizer().count_replayed_step();
  first_replay_pending_ = false;
  ++replays_;
  const int64_t n = batch.y.size(0);
  StepResult result{mean_loss(loss_value_, loss_, n),
                    correct_.defined() ? std::optional<int64_t>(correct_.item<int64_t>()) : std::nullopt, n};
  timer.lap(Phase::step);
  return result;
}

void GraphedSingleDevice::record(const data::Batch& batch) {
  graph_.reset();  // its memory returns to the device's cache first
  const Device on = device();
  x_ = empty(batch.x.sizes(), {.dtype = batch.x.dtype(), .device = on});
  y_ = empty(batch.y.sizes(), {.dtype = batch.y.dtype(), .device = on});
  auto graph = std::make_unique<cuda::CapturedWork>(on);
  graph->capture([&] {
    optimizer().zero_grad();
    Tensor output = model().forward(x_);
    Tensor loss = training_loss(loss_fn_, loss_, output, y_);
    loss.backward();
    optimizer().step();
    loss_value_ = loss.detach();
    const bool labels = are_class_labels(output, y_);
    correct_ = labels ? correct_predictions(output, y_) : Tensor();
    classes_ = labels ? output.size(1) : 0;
  });
  grads_.clear();
  for (const Tensor& p : optimizer().params()) grads_.push_back(p.grad());
  recorded_lr_ = optimizer().lr();
  recorded_addresses_ = parameter_addresses();
  graph_ = std::move(graph);
  first_replay_pending_ = true;
  ++recordings_;
}

}  // namespace duet::parallel
