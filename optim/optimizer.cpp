#include "duet/optim/optimizer.h"

#include <charconv>

#include "duet/autograd/factory.h"
#include "duet/autograd/grad_mode.h"

namespace duet::optim {

Optimizer::Optimizer(std::vector<Tensor> params, double lr)
    : params_(std::move(params)), lr_(lr), buffers_(params_.size()) {
  set_lr(lr);
  for (size_t i = 0; i < params_.size(); ++i) {
    DUET_CHECK(params_[i].defined() && params_[i].is_leaf() && params_[i].requires_grad(),
               "optimizer: parameter ", i, " (", params_[i].describe(), ") must be a leaf that requires grad");
  }
}

void Optimizer::set_lr(double lr) {
  DUET_CHECK(lr >= 0, "optimizer: learning rate must be >= 0, got ", lr);
  lr_ = lr;
}

void Optimizer::zero_grad() {
  for (const Tensor& p : params_) p.set_grad(Tensor());
}

Tensor& Optimizer::buffer(size_t index, const std::string& name) {
  Tensor& slot = buffers_[index][name];
  if (!slot.defined()) slot = zeros_like(params_[index]);
  return slot;
}

nn::NamedTensors Optimizer::state() const {
  nn::NamedTensors out;
  out.emplace_back("step", from_vector<int64_t>({step_count_}, {1}));
  for (size_t i = 0; i < buffers_.size(); ++i) {
    for (const auto& [name, t] : buffers_[i]) out.emplace_back(std::to_string(i) + "." + name, t);
  }
  return out;
}

void Optimizer::load_state(const std::map<std::string, Tensor>& state) {
  std::vector<std::map<std::string, Tensor>> loaded(params_.size());
  int64_t step = 0;
  for (const auto& [key, t] : state) {
    if (key == "step") {
      DUET_CHECK(t.numel() == 1, "optimizer state: 'step' must hold one value, got ", t.describe());
      step = t.item<int64_t>();
      continue;
    }
    size_t dot = key.find('.');
    size_t index = 0;
    auto [end, ec] = std::from_chars(key.data(), key.data() + (dot == std::string::npos ? 0 : dot), index);
    DUET_CHECK(dot != std::string::npos && ec == std::errc() && end == key.data() + dot && index < params_.size(),
               "optimizer state: unexpected entry '", key, "' for an optimizer over ", params_.size(), " parameters");
    const Tensor& p = params_[index];
    DUET_CHECK(t.sizes() == p.sizes(), "optimizer state: '", key, "' has shape ", shape_str(t.sizes()),
               " but parameter ", index, " has shape ", shape_str(p.sizes()));
    loaded[index][key.substr(dot + 1)] = t.to(p.device()).to(p.dtype()).contiguous();
  }
  buffers_ = std::move(loaded);
  step_count_ = step;
}

}  // namespace duet::optim
