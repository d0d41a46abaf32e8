// The backward engine: dependency counting over the graph, with an explicit stack and
// ready queues (no recursion), so a 10,000-op chain cannot overflow the call stack.
//
// Each node runs on its device's thread (Node::device()): the calling thread does the work
// of the first root's device, and one persistent worker per other device does that
// device's, so replicas on different devices backpropagate concurrently. A graph on a
// single device never leaves the calling thread. Hooks (tensor hooks, leaf hooks,
// post-accumulate hooks) therefore run on the thread of their node's device, which for a
// multi-device graph may be a worker: they must be thread-safe. Grad mode is off on every
// thread that runs a node. The first exception any node throws is rethrown by backward()
// once nothing of the graph runs any more; the rest of the graph is abandoned.
#pragma once

#include "duet/autograd/node.h"

namespace duet::autograd {

// Backpropagates `grads` (one per root; undefined means ones for a one-element root) from
// `roots` into the leaves' .grad. Frees the graph unless retain_graph. Returns when every
// node has run (or, after an error, when none is running).
void backward(const TensorList& roots, const TensorList& grads, bool retain_graph = false);

}  // namespace duet::autograd
