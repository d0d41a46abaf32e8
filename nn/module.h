// Module: the base of every layer and model.
//
// All of a module's state lives in three registries: named parameters, buffers and child
// modules. A layer keeps the *slot* each registration returns and reads its tensors through
// it (parameter(slot)), and its children through the typed handles register_module returns
// (Child<T>: the parent and a slot), which a copy of the parent re-parents. So a plain copy of a
// module is consistent, and clone(), to(), state_dict() and load_state_dict() are written once,
// here, for every layer.
#pragma once

#include <concepts>
#include <cstddef>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "duet/core/tensor.h"

namespace duet::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Module;
template <class Impl> class ModuleHolder;

namespace internal {

// What every Child<T> holds: its parent module and the child's slot in the parent's registry.
// It reads the slot at each use, so it sees a child that replace_child swapped in.
//
// A copy of a module copies its handles, and a handle copied while its parent is being copied
// takes the copy as its parent: after clone() or replicate() a replica's handles call the
// replica's children, wherever they sit in the derived class (a member, a vector of them). So a
// module holds handles of its own children only: one of a grandchild would stay with the
// original. The window is per thread: Module's copy constructor opens it (the derived class's
// members are copied right after), and Cloneable::shallow_copy, the next use of any handle, or
// destroying either module closes it. A plain C++ copy (`Net b = a;`) has no shallow_copy to
// close it: a handle of `a` copied before any handle is used would name b's slot, which holds
// the same child unless replace_child changed one of them.
class ChildRef {
 public:
  ChildRef() = default;
  ChildRef(const ChildRef& other);
  ChildRef& operator=(const ChildRef& other) = default;  // verbatim: no module copy assigns

  explicit operator bool() const { return parent_ != nullptr; }
  size_t slot() const { return slot_; }
  // The module in the slot now; throws if the handle was never bound by register_module.
  Module& module() const;

 protected:
  ChildRef(const Module* parent, size_t slot) : parent_(parent), slot_(slot) {}
  [[noreturn]] void throw_wrong_type(const std::type_info& expected) const;

 private:
  const Module* parent_ = nullptr;
  size_t slot_ = 0;
};

// Closes the copy window Module's copy constructor opened (see ChildRef).
void end_module_copy();

// The class name of `type`, demangled and without its namespaces: "TinyNet", "LinearImpl".
std::string class_name(const std::type_info& type);

template <class Impl> class ChildOf;

// Child<nn::Linear> names the handle of a LinearImpl: a holder stands for the class it holds.
template <class T> struct ImplOf { using type = T; };
template <class T>
requires requires { typename T::impl_type; }
struct ImplOf<T> {
  using type = typename T::impl_type;
};

}  // namespace internal

// The typed handle of a registered child module, as a member of its parent:
//   nn::Child<nn::Linear> fc_ = register_module("fc", nn::Linear(400, 120));
//   ... fc_(x), fc_->weight()
// T is a holder (nn::Linear) or a module class (nn::LinearImpl, a class of your own), and
// nn::Child<nn::Module> accepts any module. A handle of a derived class converts to one of its
// base. Unlike libtorch's holders, which point at their module, it reads the parent's registry,
// so it follows the parent's copies (clone, replicate) and replace_child; a typed handle whose
// child was replaced by a module of another class throws on use, naming both.
template <class T> using Child = internal::ChildOf<typename internal::ImplOf<T>::type>;

class Module {
 public:
  virtual ~Module();

  // Most modules map one tensor to one tensor.
  virtual Tensor forward(const Tensor& x) = 0;
  Tensor operator()(const Tensor& x) { return forward(x); }
  // The module's type, as PyTorch prints it and duet's messages name it ("Linear",
  // "Sequential"). By default the class name without namespaces ("TinyNet").
  virtual std::string name() const;
  // Its settings, as PyTorch's extra_repr() writes them ("in_features=400, out_features=120,
  // bias=True"); empty by default. str() prints them in parentheses after name().
  virtual std::string extra_repr() const;

  NamedTensors named_parameters() const;  // dotted names ("0.weight", "stem.bn.bias"), in order
  std::vector<Tensor> parameters() const;
  NamedTensors named_buffers() const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& named_children() const { return children_; }
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
  // Swaps the direct child registered as `name` for `child`, which the parent's handle then calls
  // in its place (parallel::convert_sync_batchnorm swaps BatchNorm2d layers this way). Throws if
  // there is no such child.
  void replace_child(const std::string& name, std::shared_ptr<Module> child);

  NamedTensors state_dict() const;  // parameters, then buffers
  // Copies values in by name. Throws naming the first missing, unexpected or mismatched tensor
  // (with both shapes); on error nothing has been modified.
  void load_state_dict(const std::map<std::string, Tensor>& state);
  // The checks of load_state_dict alone: throws as it would, changes nothing.
  void check_state_dict(const std::map<std::string, Tensor>& state) const;

  // The module tree as PyTorch's repr prints it: "Linear(in_features=4, out_features=2,
  // bias=True)" for a leaf, and for a module with children each on its own line, indented:
  //   Sequential(
  //     (0): Linear(in_features=4, out_features=2, bias=True)
  //     (1): ReLU()
  //   )
  std::string str() const;

 protected:
  Module() = default;
  // Shallow: clone() deepens it. It also opens the window in which the derived class's Child
  // handles, copied next, take this copy as their parent (internal::ChildRef).
  Module(const Module& other);
  // Modules are copied whole (clone, replicate), never assigned over: an assignment would copy
  // the source's handles into the target, still naming the source's children.
  Module& operator=(const Module&) = delete;

  size_t register_parameter(std::string name, Tensor value);  // marks it requires_grad
  size_t register_buffer(std::string name, Tensor value);
  // Registers `child` under `name` and returns its typed handle (Child<M>, see above).
  template <std::derived_from<Module> M> Child<M> register_module(std::string name, std::shared_ptr<M> child) {
    return Child<M>(this, add_child(std::move(name), std::move(child)));
  }
  template <class Impl> Child<Impl> register_module(std::string name, const ModuleHolder<Impl>& child) {
    return register_module(std::move(name), child.ptr());
  }

  const Tensor& parameter(size_t slot) const { return parameters_[slot].second; }
  const Tensor& buffer(size_t slot) const { return buffers_[slot].second; }
  void set_buffer(size_t slot, Tensor value) { buffers_[slot].second = std::move(value); }
  Module& child(size_t slot) const { return *children_[slot].second; }
  size_t num_children() const { return children_.size(); }

 private:
  friend class internal::ChildRef;
  // A shallow copy of the most-derived object; see Cloneable.
  virtual std::shared_ptr<Module> shallow_copy() const = 0;
  size_t add_child(std::string name, std::shared_ptr<Module> child);
  std::shared_ptr<Module> replicate_from(const std::vector<Tensor>& parameters, size_t& next_parameter,
                                         const std::vector<Tensor>& buffers, size_t& next_buffer) const;

  NamedTensors parameters_;
  NamedTensors buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

// Writes module.str(): `std::cout << *net` prints the tree as PyTorch's print(net) does.
std::ostream& operator<<(std::ostream& out, const Module& module);

namespace internal {

template <class Impl> class ChildOf : public ChildRef {
 public:
  ChildOf() = default;
  template <std::derived_from<Impl> Other> ChildOf(const ChildOf<Other>& other) : ChildRef(other) {}

  Impl& operator*() const { return *get(); }
  Impl* operator->() const { return get(); }
  Tensor operator()(const Tensor& x) const { return get()->forward(x); }
  Impl* get() const {
    Module& child = module();
    if constexpr (std::is_same_v<Impl, Module>) {
      return &child;
    } else {
      // Checked on every use, not once: replace_child may have swapped in another class since.
      if (auto* typed = dynamic_cast<Impl*>(&child)) return typed;
      throw_wrong_type(typeid(Impl));
    }
  }

 private:
  friend class ::duet::nn::Module;
  ChildOf(const Module* parent, size_t slot) : ChildRef(parent, slot) {}
};

}  // namespace internal

namespace internal {

template <class Pointer> struct IsTensorForward : std::false_type {};
template <class C> struct IsTensorForward<Tensor (C::*)(const Tensor&)> : std::true_type {};
template <class C> struct IsTensorForward<Tensor (C::*)(const Tensor&) noexcept> : std::true_type {};

// Whether M overrides Module::forward with a public `Tensor forward(const Tensor&)`. Name lookup
// of M::forward stops at the nearest class that declares a forward, so it finds Base's
// (Cloneable<M>'s) only when M declares none, and a forward of another signature hides the
// right one.
template <class M, class Base> constexpr bool overrides_forward() {
  if constexpr (requires { &M::forward; }) {  // one forward: not Base's, and of the right type
    return !std::is_same_v<decltype(&M::forward), Tensor (Base::*)(const Tensor&)> &&
           IsTensorForward<decltype(&M::forward)>::value;
  } else {  // several (or an inaccessible one): the right one among them
    return requires { static_cast<Tensor (M::*)(const Tensor&)>(&M::forward); };
  }
}

}  // namespace internal

// Layers derive from Cloneable<Self> to get shallow_copy() for free.
template <class Derived> class Cloneable : public Module {
 public:
  // Derived's forward overrides this one. It is here so that a forward of another signature
  // (the tensor taken by value, two tensors, another return type) or none at all stops the
  // build with the one sentence below, rather than leaving Derived abstract and failing, at
  // length, in every std::make_shared<Derived> that follows.
  Tensor forward(const Tensor&) override {
    static_assert(internal::overrides_forward<Derived, Cloneable>(),
                  "a module derived from nn::Cloneable<M> must declare `Tensor forward(const Tensor& x) override` "
                  "(public, taking the tensor by const reference and returning one Tensor)");
    DUET_FAIL(name(), ": Cloneable::forward reached, which Derived's forward overrides");
  }

 private:
  std::shared_ptr<Module> shallow_copy() const override {
    auto copy = std::make_shared<Derived>(static_cast<const Derived&>(*this));
    internal::end_module_copy();  // Derived's handles are copied: none after this may re-point
    return copy;
  }
};

// A shared handle to a module, as in libtorch: `nn::Linear fc(400, 120); fc->forward(x);`.
template <class Impl> class ModuleHolder {
 public:
  using impl_type = Impl;
  template <class... Args>
  requires(!(sizeof...(Args) == 1 &&
             (std::is_base_of_v<ModuleHolder, std::decay_t<Args>> && ...))) explicit ModuleHolder(Args&&... args)
      : impl_(std::make_shared<Impl>(std::forward<Args>(args)...)) {}
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
#define DUET_MODULE(Name)                                     \
  class Name : public ::duet::nn::ModuleHolder<Name##Impl> {  \
   public:                                                    \
    using ::duet::nn::ModuleHolder<Name##Impl>::ModuleHolder; \
  }

}  // namespace duet::nn
