#include "flop_count.h"

#include "duet/autograd/factory.h"
#include "duet/autograd/grad_mode.h"
#include "duet/core/error.h"

namespace duet::bench {
namespace {

// The weight of a Linear ([out, in]) or Conv2d ([out, in, kh, kw]) layer; undefined otherwise.
Tensor weight_of(const nn::Module& layer) {
  for (const auto& [name, tensor] : layer.named_parameters()) {
    if (name == "weight" && tensor.dim() >= 2) return tensor;
  }
  return {};
}

}  // namespace

FlopCount count_flops(nn::Module& model) {
  NoGradGuard no_grad;
  // One probe image through the layers in turn gives each layer's output shape.
  Tensor x = zeros({1, 1, 28, 28});
  FlopCount count;
  bool first = true;
  for (const auto& [name, layer] : model.named_children()) {
    DUET_CHECK(layer->named_children().empty(), "count_flops: layer '", name, "' (", layer->name(),
               ") has sub-layers; only flat Sequential models are counted");
    x = layer->forward(x);
    Tensor weight = weight_of(*layer);
    if (!weight.defined()) continue;
    // Every output element is a dot product of length K = weight elements per output channel.
    int64_t k = weight.numel() / weight.size(0);
    int64_t gemm = 2 * x.numel() * k;
    count.forward += gemm;
    count.backward += first ? gemm : 2 * gemm;  // weight gradient, plus input gradient after the first
    first = false;
  }
  return count;
}

}  // namespace duet::bench
