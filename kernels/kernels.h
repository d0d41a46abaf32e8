// The compute layer's whole interface. Each function dispatches once on the device type to
// kernels::cpu or kernels::cuda (kernels/dispatch.cpp). Kernels never allocate their outputs
// and never touch autograd: the caller (autograd/) checks devices, dtypes and shapes, allocates
// `out`, and records graph nodes.
//
// Conventions: inputs may have any strides (including 0 for broadcast/expanded dims); `out`
// may be any non-overlapping strided tensor. Inputs of a binary op are broadcast to out.sizes().
#pragma once

#include <cstdint>
#include <vector>

#include "duet/core/tensor.h"

namespace duet::kernels {

enum class UnaryOp : uint8_t { neg, exp, log, sqrt, abs, relu, sigmoid, tanh };
// div on integer dtypes truncates as C++ does (the op layer's duet::div divides them as f32,
// as torch.div does); floor_divide rounds toward -inf.
enum class BinaryOp : uint8_t { add, sub, mul, div, floor_divide, pow, maximum, minimum, eq, ne, lt, le, gt, ge };
enum class ReduceOp : uint8_t { sum, mean, max, min, argmax, argmin, logsumexp };

const char* name(UnaryOp op);
const char* name(BinaryOp op);
const char* name(ReduceOp op);
// Comparisons write u8 (0 or 1); every other binary op writes the inputs' dtype.
constexpr bool is_comparison(BinaryOp op) { return op >= BinaryOp::eq; }

// out = op(in). Same dtype; floating only, except neg and abs.
void unary(UnaryOp op, const Tensor& in, const Tensor& out);
// grad_in = d op / d in, evaluated from the forward input `in` and output `out`.
void unary_backward(UnaryOp op, const Tensor& grad, const Tensor& in, const Tensor& out, const Tensor& grad_in);

// out = op(a, b), with a and b broadcast to out.sizes(). a and b share one dtype.
void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out);
// Elementwise partial derivatives at out's (broadcast) shape; either grad tensor may be
// undefined to skip it. Not defined for comparisons. The caller un-broadcasts (sum_to_shape).
void binary_backward(BinaryOp op, const Tensor& grad, const Tensor& a, const Tensor& b, const Tensor& out,
                     const Tensor& grad_a, const Tensor& grad_b);

// Reduces `in` over `dims` (normalised, ascending, unique). `out` has in's rank with size 1
// in every reduced dim (keepdim layout) and the dtype reduce_output_dtype() names. argmax and
// argmin take exactly one dim and give the first extremum (NaN counts as one, as in PyTorch); an
// empty `dims` reduces over every dim.
void reduce(ReduceOp op, const Tensor& in, const std::vector<int64_t>& dims, const Tensor& out);
constexpr bool is_arg_reduction(ReduceOp op) { return op == ReduceOp::argmax || op == ReduceOp::argmin; }
// The dtype reduce writes: i64 for argmax, argmin and a sum of integers (as torch.sum), else `in`'s.
constexpr DType reduce_output_dtype(ReduceOp op, DType in) {
  return is_arg_reduction(op) || (op == ReduceOp::sum && !is_floating(in)) ? DType::i64 : in;
}

// out[b] = a[b] @ b[b] for rank-2 ([m,k] @ [k,n] -> [m,n]) or rank-3 ([B,m,k] @ [B,k,n])
// operands of one floating dtype. Strided operands are handled (transposes without copies).
void matmul(const Tensor& a, const Tensor& b, const Tensor& out);

// out = cond ? a : b, all three broadcast to out.sizes(); cond is u8.
void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out);

// dst = src, converting dtype and broadcasting src to dst.sizes(). src and dst may be on
// different devices (CPU <-> CUDA, or two logical CPU devices): this is the only kernel
// that moves data between devices.
void copy(const Tensor& src, const Tensor& dst);

void fill(const Tensor& out, double value);
// out[i] = start + i * step, for a 1-D contiguous out.
void arange(const Tensor& out, double start, double step);
// Philox draws into a contiguous floating `out`: element i uses stream position i from
// block `offset` (core/philox.h), so every device produces the same numbers.
void uniform(const Tensor& out, uint64_t seed, uint64_t offset, double low, double high);
void normal(const Tensor& out, uint64_t seed, uint64_t offset, double mean, double stddev);

// Intra-op threads for the CPU kernels (kernels/cpu/thread_pool.h). OpenBLAS itself is
// kept single-threaded and called from these threads, so the two never oversubscribe.
void set_num_threads(int threads);
int num_threads();

}  // namespace duet::kernels
