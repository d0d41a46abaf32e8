#include "cuda_test_util.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <type_traits>
#include <vector>

#include "duet/kernels/kernels.h"

namespace duet::test {
namespace {

// Elements a strided layout can reach from its first element (strides are non-negative here).
int64_t span_of(const Shape& sizes, const Shape& strides) {
  if (numel(sizes) == 0) return 0;
  int64_t span = 1;
  for (size_t d = 0; d < sizes.size(); ++d) span += (sizes[d] - 1) * strides[d];
  return span;
}

// Offset (in elements, from the view's first element) of the linear-th element, row-major.
int64_t offset_of(const Shape& sizes, const Shape& strides, int64_t linear) {
  int64_t offset = 0;
  for (size_t d = sizes.size(); d-- > 0;) {
    offset += (linear % sizes[d]) * strides[d];
    linear /= sizes[d];
  }
  return offset;
}

// A dense host copy of a host view, gathered here rather than by a kernel under test.
Tensor gather_dense(const Tensor& view) {
  Tensor out = empty_tensor(view.sizes(), view.dtype(), cpu());
  const size_t bytes = view.element_size();
  const char* base = static_cast<const char*>(view.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  for (int64_t i = 0; i < view.numel(); ++i)
    std::memcpy(dst + i * bytes, base + offset_of(view.sizes(), view.strides(), i) * bytes, bytes);
  return out;
}

double value_at(const Tensor& dense, int64_t i) {
  return dispatch_dtype(dense.dtype(), [&]<class T>() { return static_cast<double>(dense.data<T>()[i]); });
}

void fill_sentinel(const Tensor& host) {
  dispatch_dtype(host.dtype(), [&]<class T>() {
    T sentinel;
    if constexpr (std::is_floating_point_v<T>) sentinel = T(-777.25);
    else if constexpr (sizeof(T) == 8) sentinel = T(0x5A5A5A5A5A5A5A5A);
    else sentinel = T(0xA5);
    T* data = host.data<T>();
    for (int64_t i = 0; i < host.numel(); ++i) data[i] = sentinel;
  });
}

}  // namespace

Tensor empty_tensor(const Shape& sizes, DType dtype, Device device) { return empty_contiguous(sizes, dtype, device); }

Tensor copy_to(const Tensor& t, Device device) {
  Tensor out = empty_tensor(t.sizes(), t.dtype(), device);
  kernels::copy(t, out);
  return out;
}

TensorPair random_pair(const Shape& sizes, const Shape& strides, int64_t offset, DType dtype, double low, double high,
                       uint64_t seed, bool integral) {
  Tensor host = empty_tensor({offset + span_of(sizes, strides)}, dtype, cpu());
  std::mt19937_64 rng(seed);
  dispatch_dtype(dtype, [&]<class T>() {
    T* data = host.data<T>();
    std::uniform_real_distribution<double> real(low, high);
    std::uniform_int_distribution<int64_t> whole(static_cast<int64_t>(std::ceil(low)),
                                                 static_cast<int64_t>(std::floor(high)));
    const bool ints = integral || !std::is_floating_point_v<T>;
    for (int64_t i = 0; i < host.numel(); ++i) data[i] = ints ? static_cast<T>(whole(rng)) : static_cast<T>(real(rng));
  });
  Tensor device = copy_to(host, cuda_device(0));
  return {host.as_strided(sizes, strides, offset), device.as_strided(sizes, strides, offset)};
}

TensorPair random_pair(const Shape& sizes, DType dtype, double low, double high, uint64_t seed, bool integral) {
  return random_pair(sizes, contiguous_strides(sizes), 0, dtype, low, high, seed, integral);
}

GuardedOutput::GuardedOutput(const Shape& sizes, const Shape& strides, DType dtype, Device device) {
  Tensor host = empty_tensor({2 * kGuard + span_of(sizes, strides)}, dtype, cpu());
  fill_sentinel(host);
  buffer_ = copy_to(host, device);
  view_ = buffer_.as_strided(sizes, strides, kGuard);
}

GuardedOutput::GuardedOutput(const Shape& sizes, DType dtype, Device device)
    : GuardedOutput(sizes, contiguous_strides(sizes), dtype, device) {}

Tensor GuardedOutput::check_and_fetch() const {
  Tensor host = copy_to(buffer_, cpu());
  Tensor sentinels = empty_tensor(host.sizes(), host.dtype(), cpu());
  fill_sentinel(sentinels);

  std::vector<bool> covered(static_cast<size_t>(host.numel()), false);
  for (int64_t i = 0; i < view_.numel(); ++i)
    covered[static_cast<size_t>(kGuard + offset_of(view_.sizes(), view_.strides(), i))] = true;
  const size_t bytes = host.element_size();
  int64_t overwritten = 0, first = -1;
  for (int64_t i = 0; i < host.numel(); ++i) {
    if (covered[static_cast<size_t>(i)]) continue;
    if (std::memcmp(static_cast<char*>(host.data_ptr()) + i * bytes,
                    static_cast<char*>(sentinels.data_ptr()) + i * bytes, bytes) != 0) {
      if (first < 0) first = i;
      ++overwritten;
    }
  }
  INFO("buffer of " << host.numel() << " elements, view " << view_.describe() << " at offset " << kGuard
                    << "; first overwritten element " << first);
  REQUIRE(overwritten == 0);
  return gather_dense(host.as_strided(view_.sizes(), view_.strides(), kGuard));
}

void require_close(const Tensor& actual, const Tensor& expected, double rtol, double atol, const std::string& what) {
  REQUIRE(actual.sizes() == expected.sizes());
  Tensor a = gather_dense(actual), e = gather_dense(expected);
  int64_t bad = 0;
  std::ostringstream report;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = value_at(a, i), y = value_at(e, i);
    // x == y first: equal infinities differ by NaN, which no tolerance accepts.
    bool same = x == y || (std::isnan(x) && std::isnan(y)) || std::abs(x - y) <= atol + rtol * std::abs(y);
    if (!same && bad++ < 5) report << "  [" << i << "] cuda " << x << " vs cpu " << y << "\n";
  }
  INFO(what << ": " << bad << " of " << a.numel() << " elements differ\n" << report.str());
  CHECK(bad == 0);
}

void require_identical(const Tensor& actual, const Tensor& expected, const std::string& what) {
  REQUIRE(actual.sizes() == expected.sizes());
  REQUIRE(actual.dtype() == expected.dtype());
  Tensor a = gather_dense(actual), e = gather_dense(expected);
  size_t bytes = static_cast<size_t>(a.numel()) * a.element_size();
  INFO(what);
  CHECK(std::memcmp(a.data_ptr(), e.data_ptr(), bytes) == 0);
}

namespace {

// The values of f32 or f64 in order, as integers: adjacent values differ by 1, +0 and -0 are
// both 0, so the distance between two finite values is the number of ulps between them.
template <class T, class Bits> int64_t ordered(T value) {
  Bits bits;
  std::memcpy(&bits, &value, sizeof bits);
  constexpr Bits kSign = Bits(1) << (sizeof(Bits) * 8 - 1);
  const auto magnitude = static_cast<int64_t>(bits & ~kSign);
  return (bits & kSign) ? -magnitude : magnitude;
}

// The ulps between a and b, saturated (a NaN is never within any bound).
template <class T> uint64_t ulps_between(T a, T b) {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : UINT64_MAX;
  const int64_t x = ordered<T, Bits>(a), y = ordered<T, Bits>(b);
  if ((x >= 0) == (y >= 0)) return static_cast<uint64_t>(x > y ? x - y : y - x);
  const uint64_t sum = static_cast<uint64_t>(x >= 0 ? x : -x) + static_cast<uint64_t>(y >= 0 ? y : -y);
  return sum < static_cast<uint64_t>(x >= 0 ? x : -x) ? UINT64_MAX : sum;
}

}  // namespace

void require_within_ulps(const Tensor& actual, const Tensor& expected, uint64_t max_ulps, const std::string& what) {
  REQUIRE(actual.sizes() == expected.sizes());
  REQUIRE(actual.dtype() == expected.dtype());
  REQUIRE(is_floating(expected.dtype()));
  Tensor a = gather_dense(actual), e = gather_dense(expected);
  int64_t bad = 0;
  uint64_t worst = 0;
  std::ostringstream report;
  report.precision(17);  // enough digits to tell neighbouring values apart
  dispatch_floating(e.dtype(), "require_within_ulps", [&]<class T>() {
    const T* x = a.data<T>();
    const T* y = e.data<T>();
    for (int64_t i = 0; i < a.numel(); ++i) {
      const uint64_t ulps = ulps_between(x[i], y[i]);
      worst = std::max(worst, ulps);
      if (ulps > max_ulps && bad++ < 5)
        report << "  [" << i << "] cuda " << x[i] << " vs cpu " << y[i] << ": " << ulps << " ulp\n";
    }
  });
  INFO(what << ": " << bad << " of " << a.numel() << " elements more than " << max_ulps << " ulp apart (at most "
            << worst << ")\n"
            << report.str());
  CHECK(bad == 0);
}

double rtol_for(DType dtype) { return dtype == DType::f64 ? 1e-12 : 2e-6; }

}  // namespace duet::test
