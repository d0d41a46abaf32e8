// The backward engine: dependency counting over the graph, with an explicit stack and
// ready queue (no recursion), so a 10,000-op chain cannot overflow the call stack.
#pragma once

#include "duet/autograd/node.h"

namespace duet::autograd {

// Backpropagates `grads` (one per root; undefined means ones for a one-element root) from
// `roots` into the leaves' .grad. Frees the graph unless retain_graph.
void backward(const TensorList& roots, const TensorList& grads, bool retain_graph = false);

}  // namespace duet::autograd
