// Counts a model's multiply-add FLOPs per image, from its layer shapes, for the roofline.
//
// Only the layers with a weight matrix (Linear, Conv2d) are counted: each is one GEMM of
// 2*M*N*K FLOPs in the forward pass (M*N output elements, K weight elements per output channel),
// and two more of the same size in the backward pass (the weight gradient and the input
// gradient). A grouped convolution's weight [K, C / groups, kh, kw] holds exactly the K each
// output reads, and dilation spreads the taps without adding any, so both are counted right. The first such layer's
// input gradient is skipped, since nothing needs the gradient of the images. Activations, pooling, the loss and the SGD
// update are left out: they are memory-bound and small next to the GEMMs. bench/cpu/torch_models.py counts the PyTorch
// twins the same way, so the two must agree.
#pragma once

#include <cstdint>

#include "duet/nn/module.h"

namespace duet::bench {

struct FlopCount {
  int64_t forward = 0;   // per image
  int64_t backward = 0;  // per image
  int64_t total() const { return forward + backward; }
};

// `model` must be a flat Sequential (mlp, lenet, lenet-relu), fed 1x28x28 images.
FlopCount count_flops(nn::Module& model);

}  // namespace duet::bench
