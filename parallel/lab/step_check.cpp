#include "duet/parallel/lab/step_check.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "duet/autograd/ops.h"
#include "duet/core/error.h"
#include "duet/nn/models/models.h"

namespace duet::parallel {
namespace {

// Copies: Optimizer::load_state adopts a tensor already on the right device, and the
// single-device step must not write into the strategy's momentum buffers.
template <typename NamedTensors> std::map<std::string, Tensor> copies(const NamedTensors& tensors) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, t] : tensors) out.emplace(name, t.detach().clone());
  return out;
}

// The distance between two adjacent floats around `magnitude`.
double float_spacing(double magnitude) {
  const float m = std::max(static_cast<float>(magnitude), std::numeric_limits<float>::min());
  return static_cast<double>(std::nextafter(m, std::numeric_limits<float>::infinity()) - m);
}

}  // namespace

std::vector<std::vector<double>> parameter_values(const nn::Module& model) {
  std::vector<std::vector<double>> values;
  for (const Tensor& p : model.parameters()) values.push_back(p.to_vector<double>());
  return values;
}

double max_ulps(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b) {
  DUET_CHECK(a.size() == b.size(), "max_ulps: ", a.size(), " tensors against ", b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    DUET_CHECK(a[i].size() == b[i].size(), "max_ulps: tensor ", i, " has ", a[i].size(), " elements against ",
               b[i].size());
    double diff = 0, scale = 0;
    for (size_t j = 0; j < a[i].size(); ++j) {
      diff = std::max(diff, std::fabs(a[i][j] - b[i][j]));
      scale = std::max(scale, std::fabs(b[i][j]));
    }
    worst = std::max(worst, diff / float_spacing(scale));
  }
  return worst;
}

data::Batch reversed_rows(const data::Batch& batch) {
  const int64_t rows = batch.y.size(0);
  if (rows == 0) return batch;
  std::vector<Tensor> x, y;
  for (int64_t i = rows; i-- > 0;) {
    x.push_back(batch.x.narrow(0, i, 1));
    y.push_back(batch.y.narrow(0, i, 1));
  }
  return {cat(x, 0).contiguous(), cat(y, 0).contiguous()};
}

bool step_passes(double ulps, std::optional<double> order_ulps) {
  return ulps <= kCheckUlps || (order_ulps && ulps <= kOrderFactor * *order_ulps);
}

StepCheck::StepCheck(std::shared_ptr<nn::Module> model, const OptimizerFactory& make_optimizer, Device device,
                     LossFn loss_fn, CompressedRanks compressed)
    : model_(std::move(model)), loss_fn_(std::move(loss_fn)), compressed_(compressed) {
  DUET_CHECK(model_, "StepCheck: needs a model");
  model_->to(device);
  single_ = std::make_unique<SingleDevice>(model_, make_optimizer(model_->parameters()), device, LossReduction::mean,
                                           loss_fn_);
}

StepCheck::StepCheck(const std::string& model, const OptimizerFactory& make_optimizer, Device device)
    : StepCheck(nn::models::make(model), make_optimizer, device) {}

void StepCheck::before(Strategy& strategy, const data::Batch& batch) {
  // By name: a ddp model with SyncBatchNorm2d layers has BatchNorm2d's names.
  start_state_ = copies(strategy.model().state_dict());
  start_optimizer_ = copies(strategy.optimizer().state());
  start_lr_ = strategy.optimizer().lr();  // a schedule may have changed it
  batch_ = batch;
  model_->load_state_dict(start_state_);
  single_->optimizer().load_state(copies(start_optimizer_));
  single_->set_lr(start_lr_);
  if (compressed_.format == GradCompression::none) {
    single_->train_step(batch);
  } else {
    compressed_ddp_gradients(*model_, loss_fn_, batch, compressed_);
    single_->optimizer().step();
  }
  expected_ = parameter_values(*model_);
}

double StepCheck::after(Strategy& strategy) const {
  DUET_CHECK(!expected_.empty(), "StepCheck::after without before");
  return max_ulps(parameter_values(strategy.model()), expected_);
}

std::optional<double> StepCheck::order_ulps() {
  DUET_CHECK(!expected_.empty(), "StepCheck::order_ulps without before");
  if (compressed_.format != GradCompression::none) return std::nullopt;
  model_->load_state_dict(start_state_);                      // copied into the model's own tensors
  single_->optimizer().load_state(copies(start_optimizer_));  // adopted: a copy
  single_->set_lr(start_lr_);
  single_->train_step(reversed_rows(batch_));
  return max_ulps(parameter_values(*model_), expected_);
}

}  // namespace duet::parallel
