#include "duet/autograd/node.h"

#include <atomic>

#include "duet/core/error.h"

namespace duet::autograd {
namespace {

std::atomic<uint64_t> next_sequence_nr{0};

// Nodes whose last reference is being dropped. Destroying a long chain recursively would
// overflow the stack; instead each destructor hands its children to this list and the
// outermost destructor drains it.
thread_local std::vector<std::shared_ptr<Node>> doomed_nodes;
thread_local bool draining = false;

}  // namespace

Node::Node() : sequence_nr_(next_sequence_nr.fetch_add(1, std::memory_order_relaxed)) {}

Node::~Node() {
  for (Edge& edge : next_edges_) {
    if (edge.node) doomed_nodes.push_back(std::move(edge.node));
  }
  if (draining) return;
  draining = true;
  while (!doomed_nodes.empty()) {
    std::shared_ptr<Node> node = std::move(doomed_nodes.back());
    doomed_nodes.pop_back();
    node.reset();  // may run ~Node, which appends its own children
  }
  draining = false;
}

void Node::add_pre_hook(uint32_t output_nr, GradHook hook) { pre_hooks_.emplace_back(output_nr, std::move(hook)); }

SavedTensor::SavedTensor(const Tensor& tensor) {
  if (!tensor.defined()) return;
  data_ = tensor.detach();
  saved_version_ = tensor.version();
  saved_ = true;
}

Tensor SavedTensor::unpack(const Node& owner) const {
  DUET_CHECK(!owner.released(), "backward through ", owner.name(),
             " a second time: its saved tensors were freed by the first backward. "
             "Pass retain_graph=true to the first backward() to keep them");
  if (!data_.defined()) return data_;
  DUET_CHECK(data_.version() == saved_version_, "a tensor needed by ", owner.name(), " for backward (",
             data_.describe(), ") was modified in place: it is at version ", data_.version(),
             ", but was saved at version ", saved_version_, ". Modify a clone() instead");
  return data_;
}

}  // namespace duet::autograd
