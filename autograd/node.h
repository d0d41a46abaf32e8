// Node and Edge: the backward graph that differentiable ops record (define-by-run).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "duet/core/tensor.h"

namespace duet::autograd {

class Node;
using TensorList = std::vector<Tensor>;

// Where a gradient flows: input slot `input_nr` of `node`. An invalid edge (null node)
// marks an input that needs no gradient.
struct Edge {
  std::shared_ptr<Node> node;
  uint32_t input_nr = 0;
  bool valid() const { return node != nullptr; }
};

// A recorded backward function. Each forward output of the op is one of the node's inputs
// during backward; each next edge is one of the op's forward inputs.
class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node();  // iterative: see node.cpp
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // `grads` holds one gradient per forward output (undefined where none flowed in).
  // Returns one gradient per next edge (undefined where the input needs none).
  virtual TensorList apply(TensorList&& grads) = 0;
  virtual std::string name() const = 0;
  // Frees what backward needed (saved tensors). Called by the engine after apply() unless
  // retain_graph is set; a node released this way throws if applied again.
  virtual void release_saved() {}

  const std::vector<Edge>& next_edges() const { return next_edges_; }
  void set_next_edges(std::vector<Edge> edges) { next_edges_ = std::move(edges); }
  uint32_t num_outputs() const { return num_outputs_; }
  void set_num_outputs(uint32_t n) { num_outputs_ = n; }

  // Hooks on the gradient of forward output `output_nr` (Tensor::register_hook on a non-leaf).
  void add_pre_hook(uint32_t output_nr, GradHook hook);
  const std::vector<std::pair<uint32_t, GradHook>>& pre_hooks() const { return pre_hooks_; }

  // Creation order; the engine runs later nodes first when several are ready.
  uint64_t sequence_nr() const { return sequence_nr_; }

  bool released() const { return released_; }
  void mark_released() { released_ = true; }

  // The device whose worker thread runs apply() (engine.cpp): record() sets it from the
  // first forward output, AccumulateGrad from its leaf. Unset, the node runs on the thread
  // that called backward().
  const std::optional<Device>& device() const { return device_; }
  void set_device(Device device) { device_ = device; }

 private:
  std::vector<Edge> next_edges_;
  std::vector<std::pair<uint32_t, GradHook>> pre_hooks_;
  uint32_t num_outputs_ = 1;
  uint64_t sequence_nr_;
  bool released_ = false;
  std::optional<Device> device_;
};

// A tensor that backward needs, with the version it had when saved. unpack() throws if
// the tensor was modified in place since, or if the graph was already freed.
// It stores a detached alias (same storage, no autograd), so saving an op's own output
// creates no reference cycle.
class SavedTensor {
 public:
  SavedTensor() = default;
  explicit SavedTensor(const Tensor& tensor);
  Tensor unpack(const Node& owner) const;
  // Frees the tensor; the slot still counts as saved, so a later unpack() reports the freed graph.
  void reset() { data_ = Tensor(); }
  // True when a tensor was saved in this slot (even if reset() freed it since).
  bool defined() const { return saved_; }

 private:
  Tensor data_;
  uint64_t saved_version_ = 0;
  bool saved_ = false;
};

}  // namespace duet::autograd
