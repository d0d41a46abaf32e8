#include "duet/nn/fused_sequential.h"

#include <optional>

namespace duet::nn {
namespace {

// The elementwise op of an activation module that activated_avg_pool2d can fuse, if `m` is one.
std::optional<kernels::UnaryOp> fusable_activation(const Module& m) {
  if (dynamic_cast<const ReLUImpl*>(&m)) return ReLUImpl::op;
  if (dynamic_cast<const SigmoidImpl*>(&m)) return SigmoidImpl::op;
  if (dynamic_cast<const TanhImpl*>(&m)) return TanhImpl::op;
  return std::nullopt;
}

// An activation at module i and the average pooling after it, if those are there.
struct PooledActivation {
  kernels::UnaryOp activation;
  const AvgPool2dImpl* pool;
};
std::optional<PooledActivation> pooled_activation_at(const FusedSequentialImpl& s, size_t i) {
  if (i + 1 >= s.size()) return std::nullopt;
  const auto* pool = dynamic_cast<const AvgPool2dImpl*>(&s[i + 1]);
  const std::optional<kernels::UnaryOp> activation = pool ? fusable_activation(s[i]) : std::nullopt;
  if (!activation) return std::nullopt;
  return PooledActivation{*activation, pool};
}

// A convolution whose output costs less to compute again than to store and read back.
bool cheap_to_recompute(const Conv2dImpl& conv) {
  const Tensor& w = conv.weight();
  return w.size(1) * w.size(2) * w.size(3) <= FusedSequentialImpl::kMaxRecomputedMacs;
}

}  // namespace

FusedSequentialImpl::FusedSequentialImpl(const Sequential& layers) {
  for (const auto& [name, module] : layers->named_children()) register_module(name, module);
}

// The patterns are found at every call, not planned once: a module replaced since (say, by
// convert_sync_batchnorm) is then never run as what it was.
Tensor FusedSequentialImpl::forward(const Tensor& x) {
  Tensor out = x;
  for (size_t i = 0; i < size(); ++i) {
    const auto* conv = dynamic_cast<const Conv2dImpl*>(&child(i));
    if (conv && cheap_to_recompute(*conv)) {
      if (const auto tail = pooled_activation_at(*this, i + 1)) {
        out = functional::conv2d_activated_avg_pool2d(out, conv->weight(), conv->bias(), conv->params(),
                                                      tail->activation, tail->pool->params());
        i += 2;
        continue;
      }
    }
    if (const auto pooled = pooled_activation_at(*this, i)) {
      out = functional::activated_avg_pool2d(out, pooled->activation, pooled->pool->params());
      ++i;
    } else {
      out = child(i).forward(out);
    }
  }
  return out;
}

}  // namespace duet::nn
