#include "duet/parallel/strategy.h"

#include "duet/autograd/grad_mode.h"
#include "duet/autograd/ops.h"
#include "duet/nn/functional.h"

namespace duet::parallel {

SingleDevice::SingleDevice(std::shared_ptr<nn::Module> model, std::unique_ptr<optim::Optimizer> optimizer,
                           Device device, LossReduction loss)
    : model_(std::move(model)), optimizer_(std::move(optimizer)), device_(device), loss_(loss) {
  DUET_CHECK(model_ && optimizer_, "SingleDevice: needs a model and an optimizer");
  check_loss_reduction(loss_, "SingleDevice");
}

StepResult SingleDevice::train_step(const data::Batch& batch) {
  phases_ = {};
  PhaseTimer timer(phases_, 0, {device_});
  Tensor x = batch.x.to(device_), y = batch.y.to(device_);
  optimizer_->zero_grad();
  Tensor logits = model_->forward(x);
  timer.lap(Phase::forward);
  Tensor loss = nn::functional::cross_entropy(logits, y, loss_);
  timer.lap(Phase::loss);
  loss.backward();
  timer.lap(Phase::backward);
  optimizer_->step();
  timer.lap(Phase::step);
  return step_result(loss, loss_, logits, y);
}

void check_loss_reduction(LossReduction loss, const char* who) {
  DUET_CHECK(loss == LossReduction::mean || loss == LossReduction::sum, who,
             ": the training loss must be reduced by mean or sum, not none");
}

double mean_loss(const Tensor& loss, LossReduction reduction, int64_t count) {
  const double value = loss.item<double>();
  return reduction == LossReduction::sum && count > 0 ? value / static_cast<double>(count) : value;
}

StepResult step_result(const Tensor& loss, LossReduction reduction, const Tensor& logits, const Tensor& labels) {
  const Tensor correct = correct_predictions(logits, labels);
  const double mean = mean_loss(loss, reduction, labels.numel());
  return {mean, correct.item<int64_t>(), labels.numel()};
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
