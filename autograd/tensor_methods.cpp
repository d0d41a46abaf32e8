// Tensor's method twins of the ops (core/tensor.h): each calls its op with *this first. They
// live here, above core, because the ops do; the names are qualified because a member hides
// the free function of the same name.
#include "duet/autograd/ops.h"

namespace duet {

Tensor Tensor::neg() const { return duet::neg(*this); }
Tensor Tensor::exp() const { return duet::exp(*this); }
Tensor Tensor::log() const { return duet::log(*this); }
Tensor Tensor::sqrt() const { return duet::sqrt(*this); }
Tensor Tensor::abs() const { return duet::abs(*this); }
Tensor Tensor::relu() const { return duet::relu(*this); }
Tensor Tensor::sigmoid() const { return duet::sigmoid(*this); }
Tensor Tensor::tanh() const { return duet::tanh(*this); }
Tensor Tensor::clamp(std::optional<double> min, std::optional<double> max) const {
  return duet::clamp(*this, min, max);
}

Tensor Tensor::add(const Tensor& other) const { return duet::add(*this, other); }
Tensor Tensor::sub(const Tensor& other) const { return duet::sub(*this, other); }
Tensor Tensor::mul(const Tensor& other) const { return duet::mul(*this, other); }
Tensor Tensor::div(const Tensor& other) const { return duet::div(*this, other); }
Tensor Tensor::add(double other) const { return *this + other; }
Tensor Tensor::sub(double other) const { return *this - other; }
Tensor Tensor::mul(double other) const { return *this * other; }
Tensor Tensor::div(double other) const { return *this / other; }
Tensor Tensor::floor_divide(const Tensor& other) const { return duet::floor_divide(*this, other); }
Tensor Tensor::pow(const Tensor& exponent) const { return duet::pow(*this, exponent); }
Tensor Tensor::pow(double exponent) const { return duet::pow(*this, exponent); }
Tensor Tensor::maximum(const Tensor& other) const { return duet::maximum(*this, other); }
Tensor Tensor::minimum(const Tensor& other) const { return duet::minimum(*this, other); }
Tensor Tensor::eq(const Tensor& other) const { return duet::eq(*this, other); }
Tensor Tensor::ne(const Tensor& other) const { return duet::ne(*this, other); }
Tensor Tensor::lt(const Tensor& other) const { return duet::lt(*this, other); }
Tensor Tensor::le(const Tensor& other) const { return duet::le(*this, other); }
Tensor Tensor::gt(const Tensor& other) const { return duet::gt(*this, other); }
Tensor Tensor::ge(const Tensor& other) const { return duet::ge(*this, other); }
Tensor Tensor::where(const Tensor& condition, const Tensor& other) const {
  return duet::where(condition, *this, other);
}

Tensor Tensor::sum(Dims dims, bool keepdim) const { return duet::sum(*this, std::move(dims.list), keepdim); }
Tensor Tensor::mean(Dims dims, bool keepdim) const { return duet::mean(*this, std::move(dims.list), keepdim); }
Tensor Tensor::max() const { return duet::max(*this); }
Tensor Tensor::amax(Dims dims, bool keepdim) const { return duet::max(*this, std::move(dims.list), keepdim); }
Tensor Tensor::min() const { return duet::min(*this); }
ValuesIndices Tensor::min(int64_t dim, bool keepdim) const { return duet::min(*this, dim, keepdim); }
Tensor Tensor::amin(Dims dims, bool keepdim) const { return duet::amin(*this, std::move(dims.list), keepdim); }
Tensor Tensor::argmax(int64_t dim, bool keepdim) const { return duet::argmax(*this, dim, keepdim); }
Tensor Tensor::argmin(int64_t dim, bool keepdim) const { return duet::argmin(*this, dim, keepdim); }
Tensor Tensor::var(Dims dims, bool unbiased, bool keepdim) const {
  return duet::var(*this, std::move(dims.list), unbiased, keepdim);
}
Tensor Tensor::std(Dims dims, bool unbiased, bool keepdim) const {
  return duet::std(*this, std::move(dims.list), unbiased, keepdim);
}
Tensor Tensor::logsumexp(Dims dims, bool keepdim) const {
  return duet::logsumexp(*this, std::move(dims.list), keepdim);
}

Tensor Tensor::matmul(const Tensor& other) const { return duet::matmul(*this, other); }
std::vector<Tensor> Tensor::split(int64_t split_size, int64_t dim) const { return duet::split(*this, split_size, dim); }
std::vector<Tensor> Tensor::split(const std::vector<int64_t>& sizes, int64_t dim) const {
  return duet::split(*this, sizes, dim);
}
std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const { return duet::chunk(*this, chunks, dim); }

}  // namespace duet
