// Pinned (page-locked) host memory as a machine without a GPU sees it: ordinary tensors are not
// pinned, and asking for pinned memory fails with a clear error instead of crashing: "built
// without CUDA" in a CPU-only build, "no CUDA device is available" with CUDA but no GPU. Where
// a GPU exists the same requests must succeed (tests/cuda/test_cuda_pinned.cpp goes further).
#include <catch2/catch.hpp>

#include "duet/duet.h"
#include "duet/kernels/cuda/runtime.h"

using namespace duet;
using Catch::Matchers::Contains;

namespace {

// Why pinning cannot work on this machine, as the error says it.
std::string no_pinning_reason() {
  return cuda::is_built() ? "no CUDA device is available" : "duet was built without CUDA";
}

}  // namespace

TEST_CASE("ordinary host tensors are not pinned", "[pinned]") {
  CHECK_FALSE(zeros({3}).is_pinned());
  CHECK_FALSE(from_vector<float>({1, 2}).is_pinned());
  CHECK_FALSE(zeros({3}).t().contiguous().is_pinned());
}

TEST_CASE("pin_memory is for host memory only", "[pinned][errors]") {
  REQUIRE_THROWS_WITH(empty({2}, {.device = cuda_device(0), .pin_memory = true}),
                      Contains("empty: pin_memory applies to host memory, not to cuda:0"));
}

TEST_CASE("pinning without a GPU is a clear error, and with one it works", "[pinned]") {
  Tensor t = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  if (cuda::device_count() == 0) {
    const std::string reason = no_pinning_reason();
    REQUIRE_THROWS_WITH(empty({4}, {.pin_memory = true}),
                        Contains("cannot allocate pinned (page-locked) host memory") && Contains(reason));
    REQUIRE_THROWS_WITH(zeros({4}, {.pin_memory = true}), Contains(reason));
    REQUIRE_THROWS_WITH(t.pin_memory(), Contains("cannot allocate pinned") && Contains(reason));
    // An empty request still says no: whether pinning works must not depend on the size.
    REQUIRE_THROWS_WITH(empty({0}, {.pin_memory = true}), Contains(reason));
    return;
  }
  Tensor pinned = t.t().pin_memory();
  CHECK(pinned.is_pinned());
  CHECK(pinned.is_contiguous());
  CHECK(pinned.to_vector<float>() == std::vector<float>{1, 4, 2, 5, 3, 6});
  CHECK(pinned.pin_memory().is_same(pinned));
  CHECK(zeros({4}, {.pin_memory = true}).is_pinned());
}
