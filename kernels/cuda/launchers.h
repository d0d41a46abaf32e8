// Host entry points of the CUDA kernels (.cu files). Each enqueues its kernel on `stream` and
// returns; the caller (cuda_backend.cpp) has checked devices and made the device current.
// Dtypes follow the CPU backend's rules, per launcher below.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "duet/core/tensor.h"
#include "duet/kernels/kernels.h"
#include "duet/kernels/optim_kernels.h"

namespace duet::cuda {

// elementwise_unary.cu: floating dtypes, plus every dtype for neg and abs.
void launch_unary(kernels::UnaryOp op, const Tensor& in, const Tensor& out, cudaStream_t stream);
void launch_unary_backward(kernels::UnaryOp op, const Tensor& grad, const Tensor& in, const Tensor& out,
                           const Tensor& grad_in, cudaStream_t stream);

// elementwise_binary.cu: arithmetic on every dtype but pow (floating), comparisons on every
// dtype (writing u8), derivatives on floating dtypes.
void launch_binary(kernels::BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out, cudaStream_t stream);
// Writes one partial derivative: d out / d a into grad_x when `wrt_a`, else d out / d b.
void launch_binary_backward(kernels::BinaryOp op, bool wrt_a, const Tensor& grad, const Tensor& a, const Tensor& b,
                            const Tensor& out, const Tensor& grad_x, cudaStream_t stream);

// copy_where.cu: every dtype (and every dtype pair for copy).
void launch_copy(const Tensor& src, const Tensor& dst, cudaStream_t stream);
void launch_where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out, cudaStream_t stream);

// reduce.cu: the contract of kernels::reduce (kernels.h). sum, max, min and argmax on every
// dtype, mean and logsumexp on floating ones; out has in's dtype (i64 for argmax). Deterministic:
// each output is reduced in a fixed order that depends only on the shapes.
void launch_reduce(kernels::ReduceOp op, const Tensor& in, const std::vector<int64_t>& dims, const Tensor& out,
                   cudaStream_t stream);

// matmul.cpp: the contract of kernels::matmul, through cuBLAS (f32 and f64). `device` owns the
// cuBLAS handle bound to `stream`.
void launch_matmul(const Tensor& a, const Tensor& b, const Tensor& out, Device device, cudaStream_t stream);

// fill_random.cu: fill and arange on every dtype; the draws on floating dtypes into a
// contiguous `out`.
void launch_fill(const Tensor& out, double value, cudaStream_t stream);
void launch_arange(const Tensor& out, double start, double step, cudaStream_t stream);
void launch_uniform(const Tensor& out, uint64_t seed, uint64_t offset, double low, double high, cudaStream_t stream);
void launch_normal(const Tensor& out, uint64_t seed, uint64_t offset, double mean, double stddev, cudaStream_t stream);

// optim_update.cu: the contract of kernels/optim_kernels.h (f32 and f64, contiguous); the
// momentum buffer is undefined without momentum, max_exp_avg_sq without amsgrad.
void launch_sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                       const kernels::SgdUpdateArgs& args, cudaStream_t stream);
void launch_adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                        const Tensor& max_exp_avg_sq, const kernels::AdamUpdateArgs& args, cudaStream_t stream);

}  // namespace duet::cuda
