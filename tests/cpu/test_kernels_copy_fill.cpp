// The CPU copy/cast, fill and arange kernels and the Philox draws, called directly (no autograd).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "duet/core/philox.h"
#include "duet/core/storage.h"
#include "duet/kernels/kernels.h"
#include "kernel_test_tensors.h"

using namespace duet;
using namespace duet::kernels;
using namespace duet::kernel_test;
using Catch::Matchers::Contains;

TEST_CASE("copy casts dtypes and broadcasts", "[kernels]") {
  Tensor f = make<float>({4}, {-1.7f, 0.2f, 2.9f, 300.0f});
  Tensor i = empty_tensor(DType::i64, {4});
  copy(f, i);
  CHECK(values<int64_t>(i) == std::vector<int64_t>{-1, 0, 2, 300});  // truncation toward zero
  Tensor d = empty_tensor(DType::f64, {4});
  copy(i, d);
  CHECK(values<double>(d) == std::vector<double>{-1, 0, 2, 300});
  Tensor u = make<uint8_t>({3}, {0, 128, 255});
  Tensor uf = empty_tensor(DType::f32, {3});
  copy(u, uf);
  CHECK(values<float>(uf) == std::vector<float>{0, 128, 255});
  Tensor nan_in = make<float>({1}, {std::numeric_limits<float>::quiet_NaN()});
  Tensor nan_out = empty_tensor(DType::i64, {1});
  copy(nan_in, nan_out);  // defined (0), never undefined behaviour
  CHECK(values<int64_t>(nan_out) == std::vector<int64_t>{0});

  Tensor row = make<float>({3}, {1, 2, 3});
  Tensor grid = empty_tensor(DType::f32, {2, 3});
  copy(row, grid);
  CHECK(values<float>(grid) == std::vector<float>{1, 2, 3, 1, 2, 3});
  Tensor src = make<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor dst = empty_tensor(DType::f32, {3, 2});
  copy(transposed(src), dst);  // materialises a transpose
  CHECK(values<float>(dst) == std::vector<float>{1, 4, 2, 5, 3, 6});
}

TEST_CASE("copy between two logical CPU devices is a plain copy", "[kernels]") {
  Tensor src = make<float>({2}, {1, 2});
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(2 * sizeof(float), duet::cpu(1));
  impl->sizes = {2};
  impl->strides = {1};
  Tensor dst(impl);
  copy(src, dst);
  CHECK(values<float>(dst) == std::vector<float>{1, 2});
}

TEST_CASE("fill and arange", "[kernels]") {
  Tensor t = empty_tensor(DType::f32, {2, 3});
  fill(t, 2.5);
  CHECK(values<float>(t) == std::vector<float>(6, 2.5f));
  fill(t.as_strided({2}, {3}, 1), -1.0);  // a strided column
  CHECK(values<float>(t) == std::vector<float>{2.5f, -1, 2.5f, 2.5f, -1, 2.5f});
  Tensor u = empty_tensor(DType::u8, {3});
  fill(u, 7);
  CHECK(values<uint8_t>(u) == std::vector<uint8_t>{7, 7, 7});

  Tensor r = empty_tensor(DType::f64, {5});
  arange(r, 1.0, 0.5);
  CHECK(values<double>(r) == std::vector<double>{1, 1.5, 2, 2.5, 3});
  Tensor ri = empty_tensor(DType::i64, {4});
  arange(ri, 10, -3);
  CHECK(values<int64_t>(ri) == std::vector<int64_t>{10, 7, 4, 1});
}

// ---------------------------------------------------------------- random

TEST_CASE("uniform and normal follow core/philox.h element by element", "[kernels]") {
  const int64_t n = 10001;  // not a multiple of 4: partial Philox blocks at both ends of chunks
  Tensor u = empty_tensor(DType::f32, {n});
  uniform(u, 42, 7, -2.0, 3.0);
  const float* pu = u.data<float>();
  bool match = true, in_range = true;
  for (int64_t i = 0; i < n; ++i) {
    auto want = static_cast<float>(-2.0 + 5.0 * philox::uniform(philox::bits(42, 7, static_cast<uint64_t>(i))));
    match &= pu[i] == want;
    in_range &= pu[i] >= -2.0f && pu[i] < 3.0f;
  }
  CHECK(match);
  CHECK(in_range);

  Tensor g = empty_tensor(DType::f64, {n});
  normal(g, 42, 7, 1.0, 2.0);
  const double* pg = g.data<double>();
  match = true;
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    match &= pg[i] == philox::normal(42, 7, static_cast<uint64_t>(i)) * 2.0 + 1.0;
    sum += pg[i];
    sq += (pg[i] - 1.0) * (pg[i] - 1.0);
  }
  CHECK(match);
  CHECK(sum / n == Approx(1.0).margin(0.1));
  CHECK(std::sqrt(sq / n) == Approx(2.0).margin(0.1));
}

TEST_CASE("philox draws are deterministic and depend on seed and offset", "[kernels]") {
  auto draw = [](uint64_t seed, uint64_t offset) {
    Tensor t = empty_tensor(DType::f32, {64});
    uniform(t, seed, offset, 0.0, 1.0);
    return values<float>(t);
  };
  CHECK(draw(1, 0) == draw(1, 0));
  CHECK(draw(1, 0) != draw(1, 16));
  CHECK(draw(1, 0) != draw(2, 0));
  // Block `offset` + j holds elements 4j..4j+3: offset 1 is the stream shifted by 4.
  std::vector<float> base = draw(1, 0), shifted = draw(1, 1);
  CHECK(std::equal(shifted.begin(), shifted.end() - 4, base.begin() + 4));
  Tensor strided = empty_tensor(DType::f32, {4, 2});
  REQUIRE_THROWS_WITH(uniform(transposed(strided), 1, 0, 0, 1), Contains("contiguous"));
}
