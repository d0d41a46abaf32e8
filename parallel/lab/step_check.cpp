#include "duet/parallel/lab/step_check.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "duet/core/error.h"
#include "duet/nn/models/models.h"

namespace duet::parallel {
namespace {

// Copies: Optimizer::load_state adopts a tensor already on the right device, and the
// single-device step must not write into the strategy's momentum buffers.
std::map<std::string, Tensor> copies(const nn::NamedTensors& tensors) {
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
  model_->load_state_dict(copies(strategy.model().state_dict()));
  single_->optimizer().load_state(copies(strategy.optimizer().state()));
  single_->set_lr(strategy.optimizer().lr());  // a schedule may have changed it
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

}  // namespace duet::parallel
