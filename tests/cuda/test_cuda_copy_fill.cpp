// CUDA copy/cast (on one device and across host and device), fill, arange and the Philox
// draws against the CPU kernels; outputs sit between sentinel guard bands.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "duet/kernels/backend.h"
#include "duet/kernels/kernels.h"

using namespace duet;

namespace {

const Device kGpu = cuda_device(0);
const std::vector<DType> kAllDTypes = {DType::f32, DType::f64, DType::i64, DType::u8};

// Sources span negative and out-of-range values on purpose: kernels/cast.h defines every
// conversion (float -> int64 -> u8 wraps), and both devices must agree on all of them.
test::TensorPair source(const Shape& sizes, const Shape& strides, int64_t offset, DType dtype, uint64_t seed) {
  if (dtype == DType::u8) return test::random_pair(sizes, strides, offset, dtype, 0, 255, seed);
  return test::random_pair(sizes, strides, offset, dtype, -300, 300, seed);
}

std::string pair_label(const char* what, DType from, DType to) {
  return std::string(what) + " " + dtype_name(from) + " -> " + dtype_name(to);
}

}  // namespace

TEST_CASE("CUDA same-device copy casts every dtype pair, strided and broadcast", "[cuda]") {
  uint64_t seed = 600;
  for (DType from : kAllDTypes) {
    for (DType to : kAllDTypes) {
      // A transposed source with gaps, broadcast along a new leading dim, into a strided dst.
      auto src = source({29, 31}, {1, 33}, 4, from, ++seed);
      test::GuardedOutput dst({3, 29, 31}, {1000, 32, 1}, to, kGpu);
      kernels::copy(src.cuda, dst.view());
      Tensor expected = test::empty_tensor({3, 29, 31}, to, cpu());
      kernels::cpu_backend().copy(src.cpu, expected);
      test::require_identical(dst.check_and_fetch(), expected, pair_label("strided copy", from, to));

      // Dense to dense of one dtype takes the memcpy path.
      auto dense = source({4097}, {1}, 0, from, ++seed);
      test::GuardedOutput dense_dst({4097}, to, kGpu);
      kernels::copy(dense.cuda, dense_dst.view());
      Tensor dense_expected = test::empty_tensor({4097}, to, cpu());
      kernels::cpu_backend().copy(dense.cpu, dense_expected);
      test::require_identical(dense_dst.check_and_fetch(), dense_expected, pair_label("dense copy", from, to));
    }
  }
}

TEST_CASE("copies between host and CUDA handle strides, broadcasting and casts on either side", "[cuda]") {
  uint64_t seed = 700;
  for (DType from : {DType::f64, DType::f32, DType::u8}) {
    for (DType to : {DType::f32, DType::i64}) {
      // Host -> device into a strided dst.
      auto src = source({17, 1, 23}, {30, 1, 1}, 1, from, ++seed);
      test::GuardedOutput dst({17, 5, 23}, {200, 24, 1}, to, kGpu);
      kernels::copy(src.cpu, dst.view());
      Tensor expected = test::empty_tensor({17, 5, 23}, to, cpu());
      kernels::cpu_backend().copy(src.cpu, expected);
      test::require_identical(dst.check_and_fetch(), expected, pair_label("host -> cuda", from, to));

      // Device -> host from a strided CUDA view into a strided host view.
      auto dsrc = source({19, 13}, {1, 21}, 3, from, ++seed);
      Tensor host_buffer = test::empty_tensor({19 * 30}, to, cpu());
      Tensor host_view = host_buffer.as_strided({19, 13}, {30, 2}, 0);
      kernels::copy(dsrc.cuda, host_view);
      Tensor host_expected = test::empty_tensor({19, 13}, to, cpu());
      kernels::cpu_backend().copy(dsrc.cpu, host_expected);
      test::require_identical(host_view, host_expected, pair_label("cuda -> host", from, to));
    }
  }
}

TEST_CASE("CUDA fill writes the CPU's cast of the value into strided, 0-d and empty outputs", "[cuda]") {
  for (DType dtype : kAllDTypes) {
    for (double value : {3.75, -2.0, 1e30}) {
      test::GuardedOutput out({7, 13}, {20, 1}, dtype, kGpu);
      kernels::fill(out.view(), value);
      Tensor expected = test::empty_tensor({7, 13}, dtype, cpu());
      kernels::cpu_backend().fill(expected, value);
      test::require_identical(out.check_and_fetch(), expected,
                              std::string("fill ") + dtype_name(dtype) + " " + std::to_string(value));
    }
    test::GuardedOutput scalar(Shape{}, dtype, kGpu);
    kernels::fill(scalar.view(), 5);
    CHECK(scalar.check_and_fetch().numel() == 1);
    test::GuardedOutput empty({0, 3}, dtype, kGpu);
    kernels::fill(empty.view(), 5);
    empty.check_and_fetch();
  }
}

TEST_CASE("CUDA arange equals the CPU bit for bit", "[cuda]") {
  for (DType dtype : kAllDTypes) {
    for (int64_t stride : {1, 3}) {
      test::GuardedOutput out({1001}, {stride}, dtype, kGpu);
      kernels::arange(out.view(), -3.5, 0.37);
      Tensor buffer = test::empty_tensor({1001 * stride}, dtype, cpu());
      Tensor expected = buffer.as_strided({1001}, {stride}, 0);
      kernels::cpu_backend().arange(expected, -3.5, 0.37);
      test::require_identical(out.check_and_fetch(), expected,
                              std::string("arange ") + dtype_name(dtype) + " stride " + std::to_string(stride));
    }
  }
}

TEST_CASE("CUDA uniform equals the CPU bit for bit and normal within 1e-6", "[cuda]") {
  struct Draw {
    uint64_t seed, offset;
  };
  for (DType dtype : {DType::f32, DType::f64}) {
    for (int64_t n : {1, 7, 4099}) {
      for (Draw d : {Draw{1234, 0}, Draw{99, 17}}) {
        std::string what = std::string(dtype_name(dtype)) + " n=" + std::to_string(n) +
                           " seed=" + std::to_string(d.seed) + " offset=" + std::to_string(d.offset);
        test::GuardedOutput u({n}, dtype, kGpu);
        kernels::uniform(u.view(), d.seed, d.offset, -2, 3);
        Tensor u_expected = test::empty_tensor({n}, dtype, cpu());
        kernels::cpu_backend().uniform(u_expected, d.seed, d.offset, -2, 3);
        test::require_identical(u.check_and_fetch(), u_expected, "uniform " + what);

        test::GuardedOutput z({n}, dtype, kGpu);
        kernels::normal(z.view(), d.seed, d.offset, 0.5, 2);
        Tensor z_expected = test::empty_tensor({n}, dtype, cpu());
        kernels::cpu_backend().normal(z_expected, d.seed, d.offset, 0.5, 2);
        test::require_close(z.check_and_fetch(), z_expected, 1e-6, 1e-6, "normal " + what);
      }
    }
  }
}

TEST_CASE("CUDA draws reject a strided output", "[cuda]") {
  test::GuardedOutput out({10}, {2}, DType::f32, kGpu);
  CHECK_THROWS_AS(kernels::uniform(out.view(), 1, 0, 0, 1), Error);
}

// x[1:] = x[:-1] and x[:-1] = x[1:] over one dense buffer: the CPU copies with memmove, so each
// source value is read before it is overwritten. cudaMemcpyAsync promises that only for disjoint
// ranges, and with millions of elements its copy kernel's blocks would read values other blocks
// had already shifted; duet's copy goes through scratch there (copy_plan.h).
TEST_CASE("CUDA copies between overlapping views of one buffer give the CPU's memmove result", "[cuda]") {
  const int64_t n = int64_t(1) << 22;
  for (const int64_t shift : {int64_t(1), int64_t(-1), int64_t(1000)}) {
    CAPTURE(shift);
    test::TensorPair p = test::random_pair({n}, DType::f32, -100, 100, 7);
    const int64_t length = n - std::abs(shift), to = shift > 0 ? shift : 0, from = shift > 0 ? 0 : -shift;
    kernels::copy(p.cpu.as_strided({length}, {1}, from), p.cpu.as_strided({length}, {1}, to));
    kernels::copy(p.cuda.as_strided({length}, {1}, from), p.cuda.as_strided({length}, {1}, to));
    test::require_identical(test::copy_to(p.cuda, cpu()), p.cpu, "overlapping copy, shift " + std::to_string(shift));
  }
}
