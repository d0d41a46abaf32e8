// Module: the base of every layer and model.
//
// All of a module's state lives in three registries: named parameters, buffers and child
// modules. A layer keeps the *slot* each registration returns and reads its tensors through
// it (parameter(slot), child<T>(slot)). Because nothing points into another object, a plain
// copy of a module is consistent, and clone(), to(), state_dict() and load_state_dict() are
// written once, here, for every layer.
#pragma once

#include <cstddef>
#include <map>
#include <type_traits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "duet/core/tensor.h"

namespace duet::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Module {
 public:
  virtual ~Module() = default;

  // Most modules map one tensor to one tensor.
  virtual Tensor forward(const Tensor& x) = 0;
  Tensor operator()(const Tensor& x) { return forward(x); }
  // A one-line description, e.g. "Linear(in=400, out=120, bias=true)".
  virtual std::string name() const = 0;

  NamedTensors named_parameters() const;  // dotted names ("0.weight", "stem.bn.bias"), in order
  std::vector<Tensor> parameters() const;
  NamedTensors named_buffers() const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& named_children() const {
    return children_;
  }
  int64_t num_parameters() const;  // total elements

  void train(bool on = true);  // recursive
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Moves every parameter and buffer, and every parameter's .grad, to `device` in place, as
  // libtorch does: each tensor keeps its TensorImpl, so a Tensor obtained before the move (an
  // optimizer's parameter list, a hook's capture) refers to the moved data afterwards, with its
  // requires_grad and hooks. Tensors that shared a storage still share one. A view taken of a
  // parameter before the move has an impl of its own and stays on the old device, as in PyTorch.
  void to(Device device);
  // A deep copy on `device`: same structure and values, no shared storage (for replicas).
  std::shared_ptr<Module> clone(Device device) const;
  // A copy of the module tree whose parameters and buffers are the given tensors, in
  // named_parameters() / named_buffers() order. DataParallel's replicas are made this way from
  // the broadcast copies, so their gradients flow back to the master parameters.
  std::shared_ptr<Module> replicate(const std::vector<Tensor>& parameters, const std::vector<Tensor>& buffers) const;
  void zero_grad();  // drops every parameter's .grad
  // Swaps the direct child registered as `name` for `child`, which the parent then calls in its
  // place (parallel::convert_sync_batchnorm swaps BatchNorm2d layers this way). Throws if there
  // is no such child.
  void replace_child(const std::string& name, std::shared_ptr<Module> child);

  NamedTensors state_dict() const;  // parameters, then buffers
  // Copies values in by name. Throws naming the first missing, unexpected or mismatched tensor
  // (with both shapes); on error nothing has been modified.
  void load_state_dict(const std::map<std::string, Tensor>& state);
  // The checks of load_state_dict alone: throws as it would, changes nothing.
  void check_state_dict(const std::map<std::string, Tensor>& state) const;

  // A multi-line, indented description of the module tree.
  std::string str() const;

 protected:
  Module() = default;
  Module(const Module&) = default;  // shallow: clone() deepens it

  size_t register_parameter(std::string name, Tensor value);  // marks it requires_grad
  size_t register_buffer(std::string name, Tensor value);
  size_t register_module(std::string name, std::shared_ptr<Module> child);

  const Tensor& parameter(size_t slot) const { return parameters_[slot].second; }
  const Tensor& buffer(size_t slot) const { return buffers_[slot].second; }
  void set_buffer(size_t slot, Tensor value) { buffers_[slot].second = std::move(value); }
  template <class M>
  M& child(size_t slot) const {
    return static_cast<M&>(*children_[slot].second);
  }
  size_t num_children() const { return children_.size(); }

 private:
  // A shallow copy of the most-derived object; see Cloneable.
  virtual std::shared_ptr<Module> shallow_copy() const = 0;
  std::shared_ptr<Module> replicate_from(const std::vector<Tensor>& parameters, size_t& next_parameter,
                                         const std::vector<Tensor>& buffers, size_t& next_buffer) const;

  NamedTensors parameters_;
  NamedTensors buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

// Layers derive from Cloneable<Self> to get shallow_copy() for free.
template <class Derived>
class Cloneable : public Module {
 private:
  std::shared_ptr<Module> shallow_copy() const override {
    return std::make_shared<Derived>(static_cast<const Derived&>(*this));
  }
};

// A shared handle to a module, as in libtorch: `nn::Linear fc(400, 120); fc->forward(x);`.
template <class Impl>
class ModuleHolder {
 public:
  template <class... Args>
    requires(!(sizeof...(Args) == 1 && (std::is_base_of_v<ModuleHolder, std::decay_t<Args>> && ...)))
  explicit ModuleHolder(Args&&... args) : impl_(std::make_shared<Impl>(std::forward<Args>(args)...)) {}
  ModuleHolder(std::nullptr_t) {}  // empty, to be assigned later
  ModuleHolder(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

  Impl* operator->() const { return impl_.get(); }
  Impl& operator*() const { return *impl_; }
  Tensor operator()(const Tensor& x) const { return impl_->forward(x); }
  const std::shared_ptr<Impl>& ptr() const { return impl_; }
  operator std::shared_ptr<Module>() const { return impl_; }
  explicit operator bool() const { return impl_ != nullptr; }

 private:
  std::shared_ptr<Impl> impl_;
};

// DUET_MODULE(Linear) declares nn::Linear as the holder of nn::LinearImpl.
#define DUET_MODULE(Name)                                \
  class Name : public ::duet::nn::ModuleHolder<Name##Impl> { \
   public:                                               \
    using ::duet::nn::ModuleHolder<Name##Impl>::ModuleHolder; \
  }

}  // namespace duet::nn
