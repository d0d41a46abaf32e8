// Small CPU tensors for the kernel tests (tests/cpu/test_kernels_*.cpp), made and read without
// the autograd layer, so that each test exercises the kernel it names and nothing above it.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "duet/core/storage.h"
#include "duet/core/tensor.h"

namespace duet::kernel_test {

// A contiguous tensor on cpu:0 made without the autograd layer.
inline Tensor empty_tensor(DType dtype, Shape sizes) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(static_cast<size_t>(numel(sizes)) * element_size(dtype), duet::cpu());
  impl->strides = contiguous_strides(sizes);
  impl->sizes = std::move(sizes);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

template <class T> Tensor make(Shape sizes, const std::vector<T>& values) {
  Tensor t = empty_tensor(dtype_of<T>(), std::move(sizes));
  REQUIRE(static_cast<int64_t>(values.size()) == t.numel());
  std::copy(values.begin(), values.end(), t.data<T>());
  return t;
}

// The logical elements of any strided tensor, in row-major order.
template <class T> std::vector<T> values(const Tensor& t) {
  std::vector<T> out;
  const T* base = t.data<T>();
  const int64_t n = t.numel();
  Shape index(t.sizes().size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d) offset += index[d] * t.strides()[d];
    out.push_back(base[offset]);
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < t.sizes()[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

// A view that swaps the last two dims of a contiguous tensor.
inline Tensor transposed(const Tensor& t) {
  Shape sizes = t.sizes(), strides = t.strides();
  size_t d = sizes.size();
  std::swap(sizes[d - 1], sizes[d - 2]);
  std::swap(strides[d - 1], strides[d - 2]);
  return t.as_strided(sizes, strides, t.offset());
}

template <class T> std::vector<T> iota_values(int64_t n, double start = 0, double step = 1) {
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<T>(start + step * static_cast<double>(i));
  return v;
}

template <class T> void check_close(const std::vector<T>& got, const std::vector<double>& want, double tol = 1e-6) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    if (std::isnan(want[i])) {
      CHECK(std::isnan(static_cast<double>(got[i])));
    } else if (std::isinf(want[i])) {
      CHECK(static_cast<double>(got[i]) == want[i]);
    } else {
      CHECK(static_cast<double>(got[i]) == Approx(want[i]).epsilon(tol).margin(tol));
    }
  }
}

}  // namespace duet::kernel_test
