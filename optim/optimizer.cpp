#include "duet/optim/optimizer.h"

#include <charconv>
#include <optional>

#include "duet/autograd/factory.h"
#include "duet/autograd/grad_mode.h"

namespace duet::optim {

Optimizer::Optimizer(std::vector<Tensor> params, double lr)
    : params_(std::move(params)), lr_(lr), buffers_(params_.size()), updates_(params_.size(), 0) {
  Optimizer::set_lr(lr);  // for its check (a constructor dispatches nothing virtually)
  for (size_t i = 0; i < params_.size(); ++i) {
    DUET_CHECK(params_[i].defined() && params_[i].is_leaf() && params_[i].requires_grad(), "optimizer: parameter ", i,
               " (", params_[i].describe(), ") must be a leaf that requires grad");
  }
}

void Optimizer::set_lr(double lr) {
  DUET_CHECK(lr >= 0, "optimizer: learning rate must be >= 0, got ", lr);
  lr_ = lr;
}

void Optimizer::zero_grad() {
  for (const Tensor& p : params_) p.set_grad(Tensor());
}

void Optimizer::count_replayed_step() {
  ++step_count_;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].grad().defined()) ++updates_[i];
  }
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
    if (updates_[i] > 0) out.emplace_back(std::to_string(i) + ".step", from_vector<int64_t>({updates_[i]}, {1}));
  }
  return out;
}

int64_t Optimizer::state_bytes() const {
  int64_t bytes = 0;
  for (const auto& buffers : buffers_) {
    for (const auto& [name, t] : buffers) bytes += t.nbytes();
  }
  return bytes;
}

namespace {

// A count saved as a one-element tensor ("step", "<index>.step").
int64_t read_count(const std::string& key, const Tensor& t) {
  DUET_CHECK(t.numel() == 1 && !is_floating(t.dtype()), "optimizer state: '", key, "' must hold one integer, got ",
             t.describe());
  const int64_t count = t.item<int64_t>();
  DUET_CHECK(count >= 0, "optimizer state: '", key, "' must be >= 0, got ", count);
  return count;
}

}  // namespace

void Optimizer::load_state(const std::map<std::string, Tensor>& state) {
  std::vector<std::map<std::string, Tensor>> loaded(params_.size());
  std::vector<std::optional<int64_t>> counts(params_.size());
  int64_t step = 0;
  for (const auto& [key, t] : state) {
    if (key == "step") {
      step = read_count(key, t);
      continue;
    }
    size_t dot = key.find('.');
    size_t index = 0;
    auto [end, ec] = std::from_chars(key.data(), key.data() + (dot == std::string::npos ? 0 : dot), index);
    DUET_CHECK(dot != std::string::npos && ec == std::errc() && end == key.data() + dot && index < params_.size(),
               "optimizer state: unexpected entry '", key, "' for an optimizer over ", params_.size(), " parameters");
    const std::string name = key.substr(dot + 1);
    if (name == "step") {
      counts[index] = read_count(key, t);
      continue;
    }
    const Tensor& p = params_[index];
    DUET_CHECK(t.sizes() == p.sizes(), "optimizer state: '", key, "' has shape ", shape_str(t.sizes()),
               " but parameter ", index, " has shape ", shape_str(p.sizes()));
    loaded[index][name] = t.to(p.device()).to(p.dtype()).contiguous();
  }
  // Without its count (an old checkpoint), a parameter with buffers was updated at every step.
  std::vector<int64_t> updates(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) updates[i] = counts[i].value_or(loaded[i].empty() ? 0 : step);
  buffers_ = std::move(loaded);
  updates_ = std::move(updates);
  step_count_ = step;
}

}  // namespace duet::optim
