#include "duet/autograd/engine.h"

#include <condition_variable>
#include <exception>
#include <mutex>
#include <queue>
#include <unordered_map>

#include "duet/autograd/device_workers.h"
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
    DUET_CHECK(root.numel() == 1,
               "backward: a gradient can be implied only for a one-element "
               "tensor; pass one explicitly for ",
               root.describe());
    return ones(root.sizes(), {.dtype = root.dtype(), .device = root.device()});
  }
  DUET_CHECK(given.sizes() == root.sizes() && given.dtype() == root.dtype() && given.device() == root.device(),
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
    DUET_CHECK(slot < buffer.size(), "backward: gradient for output ", slot, " of ", node->name(), ", which has ",
               buffer.size(), " outputs");
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

// One backward() call. The calling thread runs the nodes of the first root's device (and
// those with no device) from `local_`; nodes on other devices run on those devices' workers
// (device_workers.h). The dependency counts and input buffers are shared, so they live under
// `mutex_`, and so does adding a gradient into a buffer.
class GraphTask : public std::enable_shared_from_this<GraphTask> {
 public:
  GraphTask(Device caller_device, bool retain_graph) : caller_device_(caller_device), retain_graph_(retain_graph) {}

  // Single-threaded setup, before anything runs.
  void seed(const Edge& edge, Tensor grad) { buffers_.add(edge.node.get(), edge.input_nr, std::move(grad)); }
  void set_dependencies(std::unordered_map<Node*, int> dependencies) { dependencies_ = std::move(dependencies); }

  // Schedules the roots, then runs this thread's nodes until the whole graph is done (or
  // abandoned after an error, which is then rethrown here).
  void execute(const std::vector<std::shared_ptr<Node>>& roots) {
    std::unique_lock lock(mutex_);
    for (const auto& node : roots) {
      if (dependencies_[node.get()] == 0) {
        dependencies_[node.get()] = -1;  // queued once, even if it is the root of several tensors
        schedule(node);
      }
    }
    for (;;) {
      if (error_ && !local_.empty()) {  // abandon this thread's share of the graph
        outstanding_ -= static_cast<int64_t>(local_.size());
        local_ = {};
      }
      if (!local_.empty()) {
        std::shared_ptr<Node> node = local_.top();
        local_.pop();
        lock.unlock();
        run(std::move(node));
        lock.lock();
      } else if (outstanding_ == 0) {
        break;
      } else {
        changed_.wait(lock);
      }
    }
    // Whatever the abandoned graph left is freed here, not on a worker that drops the task
    // last: its gradients, and the error, so that only this thread touches the exception.
    buffers_ = {};
    if (std::exception_ptr error = std::move(error_)) std::rethrow_exception(error);
  }

 private:
  bool runs_here(const Node& node) const { return !node.device() || *node.device() == caller_device_; }

  // Queues a node whose inputs are complete. Called under mutex_.
  void schedule(const std::shared_ptr<Node>& node) {
    if (runs_here(*node)) {
      local_.push(node);
      changed_.notify_all();  // the caller may be waiting for it
    } else {
      submit_to_device(*node->device(), node->sequence_nr(),
                       [task = shared_from_this(), node]() mutable { task->run(std::move(node)); });
    }
    ++outstanding_;  // only once queued: a failed submit must not leave the caller waiting
  }

  // Runs one node, on whichever thread its device asks for. Never throws: the first error is
  // kept for the caller, and nodes scheduled after it are dropped unrun.
  void run(std::shared_ptr<Node> node) {
    NoGradGuard no_grad;  // grad mode is per thread; backward formulas are not recorded
    std::unique_lock lock(mutex_);
    if (!error_) {
      TensorList inputs = buffers_.take(node.get());
      lock.unlock();
      try {
        TensorList outputs = call(*node, std::move(inputs));
        lock.lock();
        pass_on(*node, outputs);
      } catch (...) {
        if (!lock.owns_lock()) lock.lock();
        fail(std::current_exception());
      }
    }
    node.reset();  // nothing of the graph stays on a worker once backward() has returned
    if (--outstanding_ == 0 || error_) changed_.notify_all();
  }

  // The node's backward, outside the lock: this is the part that runs concurrently.
  TensorList call(Node& node, TensorList inputs) const {
    run_pre_hooks(node, inputs);
    TensorList outputs = node.apply(std::move(inputs));
    if (!retain_graph_) {
      node.release_saved();
      node.mark_released();
    }
    DUET_CHECK(outputs.empty() || outputs.size() == node.next_edges().size(), node.name(), " returned ", outputs.size(),
               " gradients for ", node.next_edges().size(), " inputs");
    return outputs;
  }

  // Hands a node's gradients to the nodes of its inputs. Called under mutex_.
  void pass_on(const Node& node, TensorList& outputs) {
    if (error_) return;
    const std::vector<Edge>& edges = node.next_edges();
    for (size_t i = 0; i < edges.size(); ++i) {
      const Edge& edge = edges[i];
      if (!edge.valid()) continue;
      if (i < outputs.size() && outputs[i].defined()) {
        buffers_.add(edge.node.get(), edge.input_nr, std::move(outputs[i]));
      }
      if (--dependencies_[edge.node.get()] == 0) schedule(edge.node);
    }
  }

  void fail(std::exception_ptr error) {
    if (!error_) error_ = std::move(error);  // the first error wins
  }

  const Device caller_device_;
  const bool retain_graph_;
  std::mutex mutex_;
  std::condition_variable changed_;  // local work arrived, the graph finished, or it failed
  std::unordered_map<Node*, int> dependencies_;
  InputBuffers buffers_;
  std::priority_queue<std::shared_ptr<Node>, std::vector<std::shared_ptr<Node>>, LaterFirst> local_;
  int64_t outstanding_ = 0;  // nodes scheduled and not yet finished, on any thread
  std::exception_ptr error_;
};

}  // namespace

void backward(const TensorList& roots, const TensorList& grads, bool retain_graph) {
  DUET_CHECK(grads.empty() || grads.size() == roots.size(), "backward: ", roots.size(), " tensors but ", grads.size(),
             " gradients");
  if (roots.empty()) return;
  NoGradGuard no_grad;  // backward formulas are not themselves recorded
  std::vector<Tensor> seeds;
  for (size_t i = 0; i < roots.size(); ++i) {
    seeds.push_back(initial_grad(roots[i], grads.empty() ? Tensor() : grads[i], i));
  }
  // This thread works for the first root's device: a single-device graph never leaves it.
  auto task = std::make_shared<GraphTask>(roots[0].device(), retain_graph);
  std::vector<std::shared_ptr<Node>> root_nodes;
  for (size_t i = 0; i < roots.size(); ++i) {
    Edge edge = gradient_edge(roots[i]);
    task->seed(edge, std::move(seeds[i]));
    root_nodes.push_back(edge.node);
  }
  std::vector<Node*> raw_roots;
  for (const auto& node : root_nodes) raw_roots.push_back(node.get());
  task->set_dependencies(count_dependencies(raw_roots));
  task->execute(root_nodes);
}

}  // namespace duet::autograd
