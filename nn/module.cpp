#include "duet/nn/module.h"

#include <cxxabi.h>

#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include "duet/autograd/factory.h"
#include "duet/autograd/grad_mode.h"

namespace duet::nn {
namespace {

std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// Where each storage went, so that tensors sharing one before a move (tied weights, views)
// share one after it. Keys hold the old storages alive, so no address is reused meanwhile.
using MovedStorages = std::map<std::shared_ptr<Storage>, std::shared_ptr<Storage>>;

// Moves t's data to `device` inside t's own TensorImpl: every handle to that TensorImpl (an
// optimizer's, a hook's, the caller's) sees the moved data, and its autograd state (identity,
// requires_grad, hooks) stays. The whole storage moves, so sizes, strides and offset still hold.
void move_in_place(const Tensor& t, Device device, MovedStorages& moved) {
  if (!t.defined() || t.device() == device) return;
  TensorImpl& impl = t.impl();
  std::shared_ptr<Storage>& target = moved[impl.storage];
  if (!target) {
    const auto elements = static_cast<int64_t>(impl.storage->nbytes() / t.element_size());
    Tensor copy = empty({elements}, {.dtype = t.dtype(), .device = device});
    copy.copy_(t.as_strided({elements}, {1}, 0));
    target = copy.storage();
  }
  impl.storage = target;
}

// A copy on `device` that shares nothing with `t`, keeping requires_grad.
Tensor deep_copy(const Tensor& t, Device device) {
  Tensor copy = t.detach().to(device);
  if (copy.storage() == t.storage()) copy = copy.clone();
  copy = copy.contiguous();
  if (t.requires_grad()) copy.requires_grad_();
  return copy;
}

// The module copy under way on this thread, if any: Module's copy constructor opens it, and the
// Child handles the derived class copies next re-point from `from` to `to` (see ChildRef).
struct ModuleCopy {
  const Module* from = nullptr;
  const Module* to = nullptr;
};
thread_local ModuleCopy module_copy;

}  // namespace

namespace internal {

void end_module_copy() { module_copy = {}; }

ChildRef::ChildRef(const ChildRef& other) : parent_(other.parent_), slot_(other.slot_) {
  if (parent_ != nullptr && parent_ == module_copy.from) parent_ = module_copy.to;
}

Module& ChildRef::module() const {
  DUET_CHECK(parent_ != nullptr, "use of a Child handle that register_module never bound");
  // A copy's handles are all copied before any is used, so a use ends a plain C++ copy's window
  // (clone and replicate end theirs in Cloneable::shallow_copy).
  if (module_copy.to != nullptr) end_module_copy();
  return *parent_->children_[slot_].second;
}

void ChildRef::throw_wrong_type(const std::type_info& expected) const {
  const auto& [name, child] = parent_->children_[slot_];
  const Module& module = *child;  // typeid of a plain reference: no evaluated expression inside it
  DUET_FAIL(parent_->name(), ": child '", name, "' is now ", module.name(), " (", class_name(typeid(module)),
            "), not the ", class_name(expected),
            " its handle expects; replace_child swapped it, and a handle that accepts any module is "
            "nn::Child<nn::Module>");
}

std::string class_name(const std::type_info& type) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(abi::__cxa_demangle(type.name(), nullptr, nullptr, &status),
                                                   std::free);
  std::string name = status == 0 ? demangled.get() : type.name();
  // Drop the namespaces (and an enclosing class) of the outermost name, not those inside its
  // template arguments: "duet::nn::Pool2dImpl<duet::X>" -> "Pool2dImpl<duet::X>".
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i + 1 < name.size(); ++i) {
    if (name[i] == '<' || name[i] == '(') ++depth;
    if (name[i] == '>' || name[i] == ')') --depth;
    if (depth == 0 && name[i] == ':' && name[i + 1] == ':') start = i + 2;
  }
  return name.substr(start);
}

}  // namespace internal

// Copies every member, as the default would, and opens the copy window.
Module::Module(const Module& other)
    : parameters_(other.parameters_), buffers_(other.buffers_), children_(other.children_), training_(other.training_) {
  module_copy = {&other, this};
}

Module::~Module() {
  if (module_copy.from == this || module_copy.to == this) internal::end_module_copy();
}

std::string Module::name() const { return internal::class_name(typeid(*this)); }

size_t Module::register_parameter(std::string name, Tensor value) {
  DUET_CHECK(value.defined(), this->name(), ": parameter '", name, "' is undefined");
  if (!value.requires_grad()) value.requires_grad_();
  parameters_.emplace_back(std::move(name), std::move(value));
  return parameters_.size() - 1;
}

size_t Module::register_buffer(std::string name, Tensor value) {
  buffers_.emplace_back(std::move(name), std::move(value));
  return buffers_.size() - 1;
}

size_t Module::add_child(std::string name, std::shared_ptr<Module> child) {
  DUET_CHECK(child != nullptr, this->name(), ": child module '", name, "' is null");
  children_.emplace_back(std::move(name), std::move(child));
  return children_.size() - 1;
}

void Module::replace_child(const std::string& name, std::shared_ptr<Module> child) {
  DUET_CHECK(child != nullptr, this->name(), ": replacement for child module '", name, "' is null");
  for (auto& [child_name, current] : children_) {
    if (child_name == name) {
      current = std::move(child);
      return;
    }
  }
  DUET_FAIL(this->name(), ": no child module '", name, "' to replace");
}

NamedTensors Module::named_parameters() const {
  NamedTensors out = parameters_;
  for (const auto& [child_name, child] : children_) {
    for (auto& [name, t] : child->named_parameters()) out.emplace_back(join(child_name, name), t);
  }
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters()) out.push_back(t);
  return out;
}

NamedTensors Module::named_buffers() const {
  NamedTensors out = buffers_;
  for (const auto& [child_name, child] : children_) {
    for (auto& [name, t] : child->named_buffers()) out.emplace_back(join(child_name, name), t);
  }
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const Tensor& p : parameters()) n += p.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::to(Device device) {
  NoGradGuard no_grad;
  MovedStorages moved;  // over the whole tree: a storage shared across children moves once
  for (const auto& [name, p] : named_parameters()) {
    move_in_place(p, device, moved);
    move_in_place(p.grad(), device, moved);
  }
  for (const auto& [name, b] : named_buffers()) move_in_place(b, device, moved);
}

std::shared_ptr<Module> Module::clone(Device device) const {
  std::shared_ptr<Module> copy = shallow_copy();
  for (auto& [name, p] : copy->parameters_) p = deep_copy(p, device);
  for (auto& [name, b] : copy->buffers_) {
    if (b.defined()) b = deep_copy(b, device);
  }
  for (auto& [name, child] : copy->children_) child = child->clone(device);
  return copy;
}

std::shared_ptr<Module> Module::replicate(const std::vector<Tensor>& parameters,
                                          const std::vector<Tensor>& buffers) const {
  size_t next_parameter = 0, next_buffer = 0;
  std::shared_ptr<Module> copy = replicate_from(parameters, next_parameter, buffers, next_buffer);
  DUET_CHECK(next_parameter == parameters.size() && next_buffer == buffers.size(), "replicate: ", name(), " has ",
             next_parameter, " parameters and ", next_buffer, " buffers, but ", parameters.size(), " and ",
             buffers.size(), " were given");
  return copy;
}

std::shared_ptr<Module> Module::replicate_from(const std::vector<Tensor>& parameters, size_t& next_parameter,
                                               const std::vector<Tensor>& buffers, size_t& next_buffer) const {
  std::shared_ptr<Module> copy = shallow_copy();
  // Same order as named_parameters(): own entries first, then each child's.
  for (auto& [name, p] : copy->parameters_) {
    DUET_CHECK(next_parameter < parameters.size(), "replicate: too few parameters for ", this->name());
    DUET_CHECK(parameters[next_parameter].sizes() == p.sizes(), "replicate: parameter '", name, "' is ",
               shape_str(p.sizes()), " but the given tensor is ", parameters[next_parameter].describe());
    p = parameters[next_parameter++];
  }
  for (auto& [name, b] : copy->buffers_) {
    DUET_CHECK(next_buffer < buffers.size(), "replicate: too few buffers for ", this->name());
    b = buffers[next_buffer++];
  }
  for (auto& [name, child] : copy->children_) {
    child = child->replicate_from(parameters, next_parameter, buffers, next_buffer);
  }
  return copy;
}

void Module::zero_grad() {
  for (const Tensor& p : parameters()) p.set_grad(Tensor());
}

NamedTensors Module::state_dict() const {
  NamedTensors out = named_parameters();
  for (auto& entry : named_buffers()) {
    if (entry.second.defined()) out.push_back(std::move(entry));
  }
  return out;
}

void Module::check_state_dict(const std::map<std::string, Tensor>& state) const {
  NamedTensors mine = state_dict();
  std::set<std::string> expected;
  for (const auto& [name, t] : mine) {
    expected.insert(name);
    auto it = state.find(name);
    DUET_CHECK(it != state.end(), "load_state_dict: ", this->name(), " expects tensor '", name, "' (", t.describe(),
               "), which the state dict lacks");
    DUET_CHECK(it->second.sizes() == t.sizes(), "load_state_dict: tensor '", name, "' has shape ",
               shape_str(it->second.sizes()), " in the state dict but ", shape_str(t.sizes()), " in the model");
  }
  for (const auto& [name, t] : state) {
    DUET_CHECK(expected.count(name), "load_state_dict: unexpected tensor '", name, "' (", t.describe(), ") for ",
               this->name());
  }
}

void Module::load_state_dict(const std::map<std::string, Tensor>& state) {
  check_state_dict(state);  // everything first, so a bad state dict leaves the model untouched
  NoGradGuard no_grad;
  for (const auto& [name, t] : state_dict()) t.copy_(state.at(name));
}

std::string Module::extra_repr() const { return ""; }

// PyTorch's nn.Module.__repr__: the settings' lines, then one line per child, whose own lines
// are indented by two more spaces; a single settings line with no children stays on one line.
std::string Module::str() const {
  std::vector<std::string> lines;
  std::istringstream settings(extra_repr());
  for (std::string line; std::getline(settings, line);) lines.push_back(line);
  const bool one_line = lines.size() <= 1 && children_.empty();
  for (const auto& [child_name, child] : children_) {
    std::string indented;
    for (char c : child->str()) indented += c == '\n' ? std::string("\n  ") : std::string(1, c);
    lines.push_back("(" + child_name + "): " + indented);
  }
  std::string out = name() + "(";
  if (one_line) {
    if (!lines.empty()) out += lines[0];
  } else {
    for (const std::string& line : lines) out += "\n  " + line;
    out += "\n";
  }
  return out + ")";
}

std::ostream& operator<<(std::ostream& out, const Module& module) { return out << module.str(); }

}  // namespace duet::nn
