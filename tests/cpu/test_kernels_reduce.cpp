// The CPU reductions (sum, mean, max, min, argmax, logsumexp), called directly (no autograd),
// against hand-computed values and naive loops.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "duet/kernels/kernels.h"
#include "kernel_test_tensors.h"

using namespace duet;
using namespace duet::kernels;
using namespace duet::kernel_test;
using Catch::Matchers::Contains;

TEST_CASE("sum and mean over various dims, keepdim layout", "[kernels]") {
  Tensor x = make<float>({2, 3, 4}, iota_values<float>(24));
  auto reduce_to = [&](ReduceOp op, const Tensor& in, std::vector<int64_t> dims, Shape out_sizes) {
    Tensor out = empty_tensor(DType::f32, std::move(out_sizes));
    reduce(op, in, dims, out);
    return values<float>(out);
  };
  CHECK(reduce_to(ReduceOp::sum, x, {}, {1, 1, 1}) == std::vector<float>{276});
  CHECK(reduce_to(ReduceOp::sum, x, {2}, {2, 3, 1}) == std::vector<float>{6, 22, 38, 54, 70, 86});
  CHECK(reduce_to(ReduceOp::sum, x, {0}, {1, 3, 4}) ==
        std::vector<float>{12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34});
  CHECK(reduce_to(ReduceOp::sum, x, {0, 2}, {1, 3, 1}) == std::vector<float>{60, 92, 124});
  CHECK(reduce_to(ReduceOp::mean, x, {1}, {2, 1, 4}) == std::vector<float>{4, 5, 6, 7, 16, 17, 18, 19});
  CHECK(reduce_to(ReduceOp::mean, x, {}, {1, 1, 1}) == std::vector<float>{11.5f});

  // Non-contiguous input: the transpose of the last two dims, [2, 4, 3].
  Tensor xt = transposed(x);
  CHECK(reduce_to(ReduceOp::sum, xt, {2}, {2, 4, 1}) == std::vector<float>{12, 15, 18, 21, 48, 51, 54, 57});
  CHECK(reduce_to(ReduceOp::sum, xt, {1}, {2, 1, 3}) == std::vector<float>{6, 22, 38, 54, 70, 86});

  // Integer sums accumulate in int64.
  Tensor i = make<int64_t>({2, 2}, {1, 2, 3, 4});
  Tensor iout = empty_tensor(DType::i64, {1, 2});
  reduce(ReduceOp::sum, i, {0}, iout);
  CHECK(values<int64_t>(iout) == std::vector<int64_t>{4, 6});
  Tensor bad = empty_tensor(DType::f32, {2, 3, 4});
  REQUIRE_THROWS_WITH(reduce(ReduceOp::sum, x, {1}, bad), Contains("sum") && Contains("f32[2, 3, 4]"));
}

TEST_CASE("max, min and argmax, with ties taking the first index", "[kernels]") {
  Tensor x = make<float>({2, 4}, {3, 7, 7, 1, -5, -2, -2, -9});
  Tensor out = empty_tensor(DType::f32, {2, 1});
  reduce(ReduceOp::max, x, {1}, out);
  CHECK(values<float>(out) == std::vector<float>{7, -2});
  reduce(ReduceOp::min, x, {1}, out);
  CHECK(values<float>(out) == std::vector<float>{1, -9});
  Tensor idx = empty_tensor(DType::i64, {2, 1});
  reduce(ReduceOp::argmax, x, {1}, idx);
  CHECK(values<int64_t>(idx) == std::vector<int64_t>{1, 1});
  Tensor idx0 = empty_tensor(DType::i64, {1, 4});
  reduce(ReduceOp::argmax, x, {0}, idx0);
  CHECK(values<int64_t>(idx0) == std::vector<int64_t>{0, 0, 0, 0});
  Tensor tie = make<float>({1, 3}, {2, 2, 2});
  Tensor tie_idx = empty_tensor(DType::i64, {1, 1});
  reduce(ReduceOp::argmax, tie, {1}, tie_idx);
  CHECK(values<int64_t>(tie_idx) == std::vector<int64_t>{0});
  REQUIRE_THROWS_WITH(reduce(ReduceOp::argmax, x, {0, 1}, tie_idx), Contains("exactly one dim"));

  // Infinities come back as themselves, not as the largest finite float.
  const float inf = std::numeric_limits<float>::infinity();
  Tensor infinite = make<float>({2, 2}, {-inf, -inf, inf, inf});
  reduce(ReduceOp::max, infinite, {1}, out);
  CHECK(values<float>(out) == std::vector<float>{-inf, inf});
  reduce(ReduceOp::min, infinite, {1}, out);
  CHECK(values<float>(out) == std::vector<float>{-inf, inf});

  // A long tied row split over threads still reports the first index.
  const int64_t n = 300000;
  std::vector<float> v(static_cast<size_t>(n), 1.0f);
  v[123457] = 5.0f;
  v[250000] = 5.0f;
  Tensor big = make<float>({1, n}, v);
  reduce(ReduceOp::argmax, big, {1}, tie_idx);
  CHECK(values<int64_t>(tie_idx) == std::vector<int64_t>{123457});
}

TEST_CASE("reducing outer dims of a wide input (column tiles) matches a naive loop", "[kernels]") {
  const int64_t rows = 777, cols = 1300;  // several tiles, the last one partial
  std::vector<float> v(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      v[static_cast<size_t>(r * cols + c)] = static_cast<float>((r * 37 + c * 11) % 101) - 50.0f;
  Tensor x = make<float>({rows, cols}, v);
  Tensor sums = empty_tensor(DType::f32, {1, cols}), maxes = empty_tensor(DType::f32, {1, cols});
  Tensor idx = empty_tensor(DType::i64, {1, cols});
  reduce(ReduceOp::sum, x, {0}, sums);
  reduce(ReduceOp::max, x, {0}, maxes);
  reduce(ReduceOp::argmax, x, {0}, idx);
  bool ok = true;
  for (int64_t c = 0; c < cols; ++c) {
    double s = 0;
    float best = v[static_cast<size_t>(c)];
    int64_t best_r = 0;
    for (int64_t r = 0; r < rows; ++r) {
      float e = v[static_cast<size_t>(r * cols + c)];
      s += e;
      if (e > best) {
        best = e;
        best_r = r;
      }
    }
    ok &= sums.data<float>()[c] == static_cast<float>(s) && maxes.data<float>()[c] == best &&
          idx.data<int64_t>()[c] == best_r;
  }
  CHECK(ok);

  // [2, 3, 4] -> mean over dim 0 into a strided out (a column of a wider buffer).
  Tensor y = make<double>({2, 3, 4}, iota_values<double>(24));
  Tensor buffer = make<double>({3, 8}, std::vector<double>(24, -1));
  Tensor out = buffer.as_strided({1, 3, 4}, {0, 8, 2}, 0);
  reduce(ReduceOp::mean, y, {0}, out);
  CHECK(values<double>(out) == std::vector<double>{6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17});
  CHECK(buffer.data<double>()[1] == -1);
}

TEST_CASE("a bias gradient's reduction (over N, H and W of [N, C, H, W]) matches a naive loop", "[kernels]") {
  // Runs of H * W = 35 elements (not a multiple of a vector), 33 channels over the threads; the
  // outputs take their runs in turns (reduce.cpp's run_reduce_by_runs).
  const int64_t n = 9, channels = 33, pixels = 35;
  std::vector<float> v(static_cast<size_t>(n * channels * pixels));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(static_cast<int64_t>(i * 7919 % 211) - 105) / 8;
  Tensor x = make<float>({n, channels, 5, 7}, v);
  Tensor sums = empty_tensor(DType::f32, {1, channels, 1, 1}), maxes = empty_tensor(DType::f32, {1, channels, 1, 1});
  reduce(ReduceOp::sum, x, {0, 2, 3}, sums);
  reduce(ReduceOp::max, x, {0, 2, 3}, maxes);
  std::vector<double> want_sum(static_cast<size_t>(channels)), want_max(static_cast<size_t>(channels), -1e30);
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t p = 0; p < pixels; ++p) {
        const double e = v[static_cast<size_t>((b * channels + c) * pixels + p)];
        want_sum[static_cast<size_t>(c)] += e;
        want_max[static_cast<size_t>(c)] = std::max(want_max[static_cast<size_t>(c)], e);
      }
    }
  }
  check_close(values<float>(sums), want_sum);  // exact: eighths of small integers
  check_close(values<float>(maxes), want_max, 0);
}

TEST_CASE("logsumexp is stable for large values and -inf rows", "[kernels]") {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor x = make<float>({3, 2}, {1000, 1000, -inf, -inf, 0, std::log(3.0f)});
  Tensor out = empty_tensor(DType::f32, {3, 1});
  reduce(ReduceOp::logsumexp, x, {1}, out);
  check_close(values<float>(out), {1000 + std::log(2.0), -std::numeric_limits<double>::infinity(), std::log(4.0)});
  Tensor ints = make<int64_t>({2}, {1, 2});
  Tensor iout = empty_tensor(DType::i64, {1});
  REQUIRE_THROWS_WITH(reduce(ReduceOp::logsumexp, ints, {0}, iout), Contains("logsumexp") && Contains("i64"));
}

TEST_CASE("logsumexp is NaN wherever a NaN is, even beside an infinity", "[kernels]") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = make<float>({4, 2}, {nan, -inf, inf, nan, -inf, nan, inf, 1});
  Tensor out = empty_tensor(DType::f32, {4, 1});
  reduce(ReduceOp::logsumexp, x, {1}, out);
  const std::vector<float> got = values<float>(out);
  CHECK(std::isnan(got[0]));
  CHECK(std::isnan(got[1]));
  CHECK(std::isnan(got[2]));
  CHECK(got[3] == inf);
}

TEST_CASE("a large full sum is split over threads and stays accurate", "[kernels]") {
  const int64_t n = 1 << 20;
  Tensor x = make<float>({n}, std::vector<float>(static_cast<size_t>(n), 0.1f));
  Tensor out = empty_tensor(DType::f32, {1});
  reduce(ReduceOp::sum, x, {}, out);
  CHECK(values<float>(out)[0] == Approx(static_cast<double>(0.1f) * n).epsilon(1e-7));
  reduce(ReduceOp::mean, x, {0}, out);
  CHECK(values<float>(out)[0] == Approx(0.1f).epsilon(1e-7));
}

TEST_CASE("reducing the last dim of many rows (the row path) matches a naive loop, NaNs included", "[kernels]") {
  // 5000 rows of 13 (not a vector's multiple), enough rows to be split over the threads; every
  // 97th row holds a NaN, every 89th a tie for its maximum. The outputs go to a column of a
  // wider buffer, a stride apart.
  const int64_t rows = 5000, cols = 13;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> v(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c)
      v[static_cast<size_t>(r * cols + c)] = static_cast<float>((r * 31 + c * 17) % 23);
    if (r % 89 == 0) v[static_cast<size_t>(r * cols + 2)] = v[static_cast<size_t>(r * cols + 9)] = 40.0f;
    if (r % 97 == 0) v[static_cast<size_t>(r * cols + 5)] = nan;
  }
  const Tensor x = make<float>({rows, cols}, v);
  const Tensor sum_buffer = make<float>({rows, 2}, std::vector<float>(static_cast<size_t>(2 * rows), -1));
  const Tensor sums = sum_buffer.as_strided({rows, 1}, {2, 1}, 1);  // column 1
  const Tensor maxes = empty_tensor(DType::f32, {rows, 1}), lse = empty_tensor(DType::f32, {rows, 1});
  const Tensor first_max = empty_tensor(DType::i64, {rows, 1}), first_min = empty_tensor(DType::i64, {rows, 1});
  reduce(ReduceOp::sum, x, {1}, sums);
  reduce(ReduceOp::max, x, {1}, maxes);
  reduce(ReduceOp::logsumexp, x, {1}, lse);
  reduce(ReduceOp::argmax, x, {1}, first_max);
  reduce(ReduceOp::argmin, x, {1}, first_min);
  bool ok = true;
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = v.data() + r * cols;
    double s = 0, e = 0;
    int64_t hi = 0, lo = 0, nan_at = -1;
    for (int64_t c = 0; c < cols; ++c) {
      s += row[c];
      e += std::exp(static_cast<double>(row[c]) - 40.0);
      if (std::isnan(row[c]) && nan_at < 0) nan_at = c;
      if (row[c] > row[hi]) hi = c;
      if (row[c] < row[lo]) lo = c;
    }
    const auto i = static_cast<size_t>(r);
    if (nan_at >= 0) {  // NaN wins, at its first index, as in PyTorch
      ok &= std::isnan(sums.data<float>()[r * 2]) && std::isnan(maxes.data<float>()[i]) &&
            std::isnan(lse.data<float>()[i]) && first_max.data<int64_t>()[i] == nan_at &&
            first_min.data<int64_t>()[i] == nan_at;
    } else {
      ok &= sums.data<float>()[r * 2] == static_cast<float>(s) && maxes.data<float>()[i] == row[hi] &&
            std::abs(lse.data<float>()[i] - static_cast<float>(40.0 + std::log(e))) <= 1e-5f * 40 &&
            first_max.data<int64_t>()[i] == hi && first_min.data<int64_t>()[i] == lo;
    }
    ok &= sum_buffer.data<float>()[r * 2] == -1;  // the other column is untouched
  }
  CHECK(ok);
}
