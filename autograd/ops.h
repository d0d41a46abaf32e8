// The public differentiable ops, in namespace duet (like torch.*). Each checks its inputs
// (devices, dtypes, shapes; the error names the op and what clashed), computes through
// kernels::, and records a backward node when an input requires grad.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "duet/core/tensor.h"

namespace duet {

// ---- elementwise unary ----
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
// torch.clamp: min(max(x, min), max), each bound optional (at least one given); the gradient
// passes where min <= x <= max. NaN stays NaN (its gradient passes too; PyTorch's is 0). The
// bounds are 0-d tensors of x's dtype, so an integer x clamps to truncated bounds.
Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max = std::nullopt);

// ---- elementwise binary, NumPy broadcasting; a scalar is a 0-d tensor of the other's dtype ----
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
// True division, as torch.div: integer operands give f32 (-7 / 2 = -3.5).
Tensor div(const Tensor& a, const Tensor& b);
// a / b rounded toward -inf, in a's dtype (-7 // 2 = -4), as torch.floor_divide in 1.13 and
// torch.div(a, b, rounding_mode='floor'). Integer division by zero throws on the CPU (PyTorch
// raises ZeroDivisionError); floating division by zero gives +-inf or NaN. Its gradient is
// zero, as that of torch.div(rounding_mode='floor') (torch.floor_divide has none).
Tensor floor_divide(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, double exponent);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
// Comparisons return u8 0/1 and are not differentiable.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);

// A 0-d tensor holding `value`, with the dtype and device of `like`.
Tensor scalar_like(double value, const Tensor& like);

Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);

// ---- reductions over `dims` (empty = all dims) ----
// sum of an integer tensor is i64, as torch.sum; mean needs a floating one (torch.mean too).
Tensor sum(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
// Max values; on ties the gradient is split evenly among the maxima (like torch.amax).
Tensor max(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);  // i64, not differentiable
// Min values; on ties the gradient is split evenly among the minima (torch.amin; torch.min(x)
// without a dim does the same). NaN is the minimum wherever it appears, as in PyTorch.
Tensor amin(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor min(const Tensor& x);
// torch.min(x, dim): the minimum along dim and the index of its first occurrence (ValuesIndices,
// core/tensor.h); the gradient goes to that index only.
ValuesIndices min(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim = false);  // i64, not differentiable
// Variance and standard deviation over dims (all when empty), as torch.var and torch.std in 1.13:
// sum((x - mean)^2) / max(0, n - 1) when unbiased (the default), / n otherwise. std's gradient
// is 0 where std is 0.
Tensor var(const Tensor& x, std::vector<int64_t> dims = {}, bool unbiased = true, bool keepdim = false);
Tensor std(const Tensor& x, std::vector<int64_t> dims = {}, bool unbiased = true, bool keepdim = false);
Tensor logsumexp(const Tensor& x, std::vector<int64_t> dims, bool keepdim = false);

// ---- linear algebra ----
// [m,k]@[k,n]; batched [...,m,k]@[...,k,n] with broadcast batch dims; 1-D operands as NumPy.
Tensor matmul(const Tensor& a, const Tensor& b);

// ---- joining and splitting ----
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
// Views of consecutive pieces of `split_size` along dim (the last may be smaller).
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim = 0);
// `chunks` pieces as in torch.chunk, of the lengths chunk_sizes(x.size(dim), chunks).
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
// torch.chunk's piece lengths for `length` elements: ceil(length / chunks) each, the last
// piece smaller, and FEWER than `chunks` pieces when the ceil-sized ones use everything up:
// (10, 4) -> [3, 3, 3, 1], (6, 4) -> [2, 2, 2], (5, 4) -> [2, 2, 1], (2, 3) -> [1, 1].
// A length of 0 gives `chunks` empty pieces, as torch does.
std::vector<int64_t> chunk_sizes(int64_t length, int64_t chunks);
// cond (u8) ? a : b, broadcast; differentiable in a and b.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);

}  // namespace duet
