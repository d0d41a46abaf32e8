#include "duet/autograd/engine.h"

#include <queue>
#include <unordered_map>

#include "duet/autograd/factory.h"
#include "duet/autograd/function.h"
#include "duet/autograd/ops.h"

namespace duet::autograd {
namespace {

// The gradient a root starts with: the one given, or 1 for a one-element root.
Tensor initial_grad(const Tensor& root, const Tensor& given, size_t index) {
  DUET_CHECK(root.requires_grad(), "backward: tensor ", index, " (", root.describe(),
             ") does not require grad and has no grad_fn");
  if (!given.defined()) {
    DUET_CHECK(root.numel() == 1, "backward: a gradient can be implied only for a one-element "
               "tensor; pass one explicitly for ", root.describe());
    return ones(root.sizes(), {.dtype = root.dtype(), .device = root.device()});
  }
  DUET_CHECK(given.sizes() == root.sizes() && given.dtype() == root.dtype() &&
                 given.device() == root.device(),
             "backward: gradient ", given.describe(), " does not match its tensor ", root.describe());
  return given;
}

// In-degree of every node reachable from the roots, found with an explicit stack.
std::unordered_map<Node*, int> count_dependencies(const std::vector<Node*>& roots) {
  std::unordered_map<Node*, int> dependencies;
  std::vector<Node*> stack;
  std::unordered_map<Node*, bool> seen;
  for (Node* root : roots) {
    if (!seen[root]) {
      seen[root] = true;
      stack.push_back(root);
    }
  }
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (const Edge& edge : node->next_edges()) {
      if (!edge.valid()) continue;
      Node* next = edge.node.get();
      ++dependencies[next];
      if (!seen[next]) {
        seen[next] = true;
        stack.push_back(next);
      }
    }
  }
  return dependencies;
}

// Gradients arriving at each node, one slot per forward output, summed as they come.
class InputBuffers {
 public:
  void add(Node* node, uint32_t slot, Tensor grad) {
    TensorList& buffer = buffers_[node];
    if (buffer.empty()) buffer.resize(node->num_outputs());
    DUET_CHECK(slot < buffer.size(), "backward: gradient for output ", slot, " of ", node->name(),
               ", which has ", buffer.size(), " outputs");
    Tensor& acc = buffer[slot];
    acc = acc.defined() ? add_grads(acc, grad) : std::move(grad);
  }
  TensorList take(Node* node) {
    auto it = buffers_.find(node);
    if (it == buffers_.end()) return TensorList(node->num_outputs());
    TensorList out = std::move(it->second);
    buffers_.erase(it);
    return out;
  }

 private:
  static Tensor add_grads(const Tensor& a, const Tensor& b) {
    DUET_CHECK(a.sizes() == b.sizes(), "backward: gradients of shapes ", shape_str(a.sizes()), " and ",
               shape_str(b.sizes()), " reach the same tensor");
    return a + b;
  }
  std::unordered_map<Node*, TensorList> buffers_;
};

void run_pre_hooks(const Node& node, TensorList& grads) {
  for (const auto& [slot, hook] : node.pre_hooks()) {
    if (slot >= grads.size() || !grads[slot].defined()) continue;
    Tensor replaced = hook(grads[slot]);
    if (replaced.defined()) grads[slot] = std::move(replaced);
  }
}

struct LaterFirst {
  bool operator()(const std::shared_ptr<Node>& a, const std::shared_ptr<Node>& b) const {
    return a->sequence_nr() < b->sequence_nr();
  }
};

}  // namespace

void backward(const TensorList& roots, const TensorList& grads, bool retain_graph) {
  DUET_CHECK(grads.empty() || grads.size() == roots.size(), "backward: ", roots.size(),
             " tensors but ", grads.size(), " gradients");
  NoGradGuard no_grad;  // backward formulas are not themselves recorded
  InputBuffers buffers;
  std::vector<std::shared_ptr<Node>> root_nodes;
  for (size_t i = 0; i < roots.size(); ++i) {
    Tensor grad = initial_grad(roots[i], grads.empty() ? Tensor() : grads[i], i);
    Edge edge = gradient_edge(roots[i]);
    buffers.add(edge.node.get(), edge.input_nr, std::move(grad));
    root_nodes.push_back(edge.node);
  }
  std::vector<Node*> raw_roots;
  for (const auto& node : root_nodes) raw_roots.push_back(node.get());
  std::unordered_map<Node*, int> dependencies = count_dependencies(raw_roots);

  // Among ready nodes, the most recently created runs first: it is closest to the output.
  std::priority_queue<std::shared_ptr<Node>, std::vector<std::shared_ptr<Node>>, LaterFirst> ready;
  for (const auto& node : root_nodes) {
    if (dependencies[node.get()] == 0) {
      dependencies[node.get()] = -1;  // queued once, even if it is the root of several tensors
      ready.push(node);
    }
  }
  while (!ready.empty()) {
    std::shared_ptr<Node> node = ready.top();
    ready.pop();
    TensorList inputs = buffers.take(node.get());
    run_pre_hooks(*node, inputs);
    TensorList outputs = node->apply(std::move(inputs));
    if (!retain_graph) {
      node->release_saved();
      node->mark_released();
    }
    const std::vector<Edge>& edges = node->next_edges();
    DUET_CHECK(outputs.empty() || outputs.size() == edges.size(), node->name(), " returned ",
               outputs.size(), " gradients for ", edges.size(), " inputs");
    for (size_t i = 0; i < edges.size(); ++i) {
      const Edge& edge = edges[i];
      if (!edge.valid()) continue;
      if (i < outputs.size() && outputs[i].defined()) {
        buffers.add(edge.node.get(), edge.input_nr, std::move(outputs[i]));
      }
      if (--dependencies[edge.node.get()] == 0) ready.push(edge.node);
    }
  }
}

}  // namespace duet::autograd
