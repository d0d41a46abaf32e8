#include "duet/parallel/strategy.h"

#include <algorithm>

#include "duet/autograd/grad_mode.h"
#include "duet/autograd/ops.h"
#include "duet/nn/functional.h"
#include "duet/parallel/data_parallel.h"
#include "duet/parallel/distributed.h"
#include "duet/parallel/graphed_single_device.h"
#include "duet/parallel/replica_threads.h"

namespace duet::parallel {

std::unique_ptr<Strategy> make_strategy(StrategyKind kind, std::shared_ptr<nn::Module> model,
                                        const OptimizerFactory& make_optimizer, const std::vector<Device>& devices,
                                        const StrategyOptions& options) {
  const std::string name = to_string(kind);  // for the messages
  DUET_CHECK(model && make_optimizer, "make_strategy: ", name, " needs a model and an optimizer factory");
  DUET_CHECK(!devices.empty(), "make_strategy: ", name, " needs at least one device");
  DUET_CHECK(!options.cuda_graph || kind == StrategyKind::single,
             "make_strategy: a CUDA graph records a single device's step, "
             "not ",
             name, "'s");
  DUET_CHECK(!options.comm || runs_across_processes(kind),
             "make_strategy: only ddp and its variants but ddp-d2l, and zero1, run over a multi-process communicator, "
             "not ",
             name);
  if (kind == StrategyKind::single) {
    if (options.cuda_graph) {
      return std::make_unique<GraphedSingleDevice>(model, make_optimizer(model->parameters()), devices[0], options.loss,
                                                   GraphedSingleDevice::kWarmupSteps, options.loss_fn);
    }
    return std::make_unique<SingleDevice>(model, make_optimizer(model->parameters()), devices[0], options.loss,
                                          options.loss_fn);
  }
  if (kind == StrategyKind::dp)
    return std::make_unique<DataParallel>(model, make_optimizer(model->parameters()), devices, options.loss,
                                          options.link, options.loss_fn);
  DUET_CHECK(!options.comm || !options.link.emulated(), "make_strategy: link ", options.link.name,
             " is emulated between the devices of one process, not across processes");
  DDPOptions ddp = options.ddp;
  if (options.link.emulated()) ddp.link = options.link;
  ddp.bucketed = kind != StrategyKind::ddp_unbucketed && kind != StrategyKind::ddp_d2l;
  ddp.reduce_through_first_device = kind == StrategyKind::ddp_d2l;
  ddp.shard_optimizer = kind == StrategyKind::zero1;
  ddp.loss = options.loss;
  ddp.loss_fn = options.loss_fn;
  if (kind == StrategyKind::ddp_naive) ddp.algorithm = LocalAlgorithm::naive;
  if (!options.comm) return std::make_unique<DistributedDataParallel>(model, make_optimizer, devices, ddp);
  DUET_CHECK(devices.size() == 1 && devices[0] == options.comm->device(), "make_strategy: ", name,
             " over a multi-process communicator runs on its rank's device ", options.comm->device(), ", not on ",
             device_list(devices));
  return std::make_unique<DistributedDataParallel>(model, make_optimizer, options.comm, ddp);
}

void check_model_on(const nn::Module& model, Device device, const char* who) {
  for (const auto& [name, p] : model.named_parameters()) {
    DUET_CHECK(p.device() == device, who, ": the model must live on ", device.str(), " (devices[0]), but parameter '",
               name, "' is on ", p.device().str());
  }
}

SingleDevice::SingleDevice(std::shared_ptr<nn::Module> model, std::unique_ptr<optim::Optimizer> optimizer,
                           Device device, LossReduction loss, LossFn loss_fn)
    : model_(std::move(model)),
      optimizer_(std::move(optimizer)),
      device_(device),
      loss_(loss),
      loss_fn_(std::move(loss_fn)) {
  DUET_CHECK(model_ && optimizer_, "SingleDevice: needs a model and an optimizer");
  check_loss_reduction(loss_, "SingleDevice");
}

StepResult Strategy::train_accumulated(const std::vector<data::Batch>& micro_batches) {
  DUET_CHECK(micro_batches.size() == 1, "this strategy on ", devices(), " trains on one batch per step, not ",
             micro_batches.size(), " micro-batches (no gradient accumulation)");
  return train_step(micro_batches[0]);
}

StepResult SingleDevice::train_accumulated(const std::vector<data::Batch>& micro_batches) {
  MicroBatches accumulated(micro_batches, loss_, "SingleDevice");
  DeviceThreadScope on_device(device_);
  phases_ = {};
  PhaseTimer timer(phases_, 0, {device_});
  optimizer_->zero_grad();
  for (size_t m = 0; m < micro_batches.size(); ++m) {
    Tensor x = micro_batches[m].x.to(device_), y = micro_batches[m].y.to(device_);
    Tensor output = model_->forward(x);
    timer.lap(Phase::forward);
    Tensor loss = training_loss(loss_fn_, loss_, output, y);
    timer.lap(Phase::loss);
    const double scale = accumulated.loss_scale(m);
    (scale == 1 ? loss : loss * scale).backward();
    timer.lap(Phase::backward);
    accumulated.add(step_result(loss, loss_, output, y));
  }
  optimizer_->step();
  timer.lap(Phase::step);
  return accumulated.total();
}

MicroBatches::MicroBatches(const std::vector<data::Batch>& micro_batches, LossReduction loss, const char* who)
    : loss_(loss) {
  DUET_CHECK(!micro_batches.empty(), who, ": a step needs at least one micro-batch");
  for (const data::Batch& b : micro_batches) {
    rows_.push_back(b.y.size(0));
    total_rows_ += b.y.size(0);
  }
}

double MicroBatches::loss_scale(size_t index) const {
  if (loss_ != LossReduction::mean || rows_.size() == 1 || total_rows_ == 0) return 1;
  return static_cast<double>(rows_.at(index)) / static_cast<double>(total_rows_);
}

void MicroBatches::add(const StepResult& micro_batch) {
  loss_sum_ += micro_batch.loss * static_cast<double>(micro_batch.count);
  if (micro_batch.correct) total_.correct = total_.correct.value_or(0) + *micro_batch.correct;
  total_.count += micro_batch.count;
  total_.loss = total_.count > 0 ? loss_sum_ / static_cast<double>(total_.count) : 0;
}

StepResult MicroBatches::total() const { return total_; }

void check_loss_reduction(LossReduction loss, const char* who) {
  DUET_CHECK(loss == LossReduction::mean || loss == LossReduction::sum, who,
             ": the training loss must be reduced by mean or sum, not none");
}

double mean_loss(const Tensor& loss, LossReduction reduction, int64_t count) {
  const double value = loss.item<double>();
  return reduction == LossReduction::sum && count > 0 ? value / static_cast<double>(count) : value;
}

StepResult step_result(const Tensor& loss, LossReduction reduction, const Tensor& output, const Tensor& target) {
  const int64_t rows = target.size(0);
  if (!are_class_labels(output, target)) return {mean_loss(loss, reduction, rows), std::nullopt, rows};
  const Tensor correct = correct_predictions(output, target);
  const double mean = mean_loss(loss, reduction, rows);
  return {mean, correct.item<int64_t>(), rows};
}

int64_t count_correct(const Tensor& logits, const Tensor& labels) {
  return correct_predictions(logits, labels).item<int64_t>();
}

Tensor correct_predictions(const Tensor& logits, const Tensor& labels) {
  NoGradGuard no_grad;
  return sum(eq(argmax(logits, 1), labels));  // i64, as a sum of integers is
}

double evaluate(nn::Module& model, data::DataLoader& loader, Device device) {
  NoGradGuard no_grad;
  bool was_training = model.is_training();
  model.eval();
  int64_t correct = 0, total = 0;
  for (auto& [x, y] : loader) {
    Tensor labels = y.to(device);
    correct += count_correct(model.forward(x.to(device)), labels);
    total += labels.numel();
  }
  model.train(was_training);
  return total == 0 ? 0.0 : static_cast<double>(correct) / static_cast<double>(total);
}

}  // namespace duet::parallel
