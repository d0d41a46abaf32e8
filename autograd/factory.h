// Tensor factories. They live with the ops, not in core, because they compute (fill, Philox
// draws) through kernels:: on the target device.
#pragma once

#include <vector>

#include "duet/core/generator.h"
#include "duet/core/tensor.h"

namespace duet {

struct TensorOptions {
  DType dtype = DType::f32;
  Device device = cpu();
  bool requires_grad = false;
  // Page-locked host memory (a CPU device only), for asynchronous copies to a GPU; see
  // Tensor::pin_memory().
  bool pin_memory = false;
};

Tensor empty(Shape sizes, TensorOptions options = {});
Tensor zeros(Shape sizes, TensorOptions options = {});
Tensor ones(Shape sizes, TensorOptions options = {});
Tensor full(Shape sizes, double value, TensorOptions options = {});
// [start, end) in steps of `step`, as in torch.arange.
Tensor arange(double start, double end, double step = 1, TensorOptions options = {});
Tensor arange(double end, TensorOptions options = {});
// Uniform in [0, 1) and standard normal, drawn from `generator` (the default one if null).
Tensor rand(Shape sizes, TensorOptions options = {}, Generator* generator = nullptr);
Tensor randn(Shape sizes, TensorOptions options = {}, Generator* generator = nullptr);
// Copies `values` into a tensor of shape `sizes` (1-D when empty); numel must match.
template <class T> Tensor from_vector(const std::vector<T>& values, Shape sizes = {}, TensorOptions options = {});

Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor empty_like(const Tensor& t);  // contiguous, same dtype and device

}  // namespace duet
