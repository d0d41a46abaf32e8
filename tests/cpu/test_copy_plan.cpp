// plan_dense_copy (kernels/cuda/copy_plan.h), the choice between one cudaMemcpyAsync and a copy
// through scratch that CUDA's dense copy makes: plain C++, tested here without a GPU.
#include <catch2/catch.hpp>

#include "duet/kernels/cuda/copy_plan.h"

using duet::cuda::DenseCopy;
using duet::cuda::plan_dense_copy;

TEST_CASE("a dense CUDA copy is direct only between disjoint byte ranges", "[copy_plan]") {
  CHECK(plan_dense_copy(1000, 2000, 1000) == DenseCopy::direct);  // touching, not overlapping
  CHECK(plan_dense_copy(2000, 1000, 1000) == DenseCopy::direct);
  CHECK(plan_dense_copy(1000, 5000, 16) == DenseCopy::direct);
  // x[1:] = x[:-1] and x[:-1] = x[1:] on f32: overlapping by all but 4 bytes.
  CHECK(plan_dense_copy(1004, 1000, 396) == DenseCopy::staged);
  CHECK(plan_dense_copy(1000, 1004, 396) == DenseCopy::staged);
  CHECK(plan_dense_copy(1000, 1999, 1000) == DenseCopy::staged);  // one byte in common
  CHECK(plan_dense_copy(1999, 1000, 1000) == DenseCopy::staged);
}

TEST_CASE("a dense CUDA copy onto itself or of no bytes does nothing", "[copy_plan]") {
  CHECK(plan_dense_copy(1000, 1000, 400) == DenseCopy::none);
  CHECK(plan_dense_copy(1000, 2000, 0) == DenseCopy::none);
  CHECK(plan_dense_copy(1000, 1004, 0) == DenseCopy::none);
}
