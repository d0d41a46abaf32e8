// The PyTorch 1.13 cases of tests/golden/options.safetensors (tests/options_golden.cpp) run on a
// GPU: every option's CUDA path against PyTorch's values, as tests/cpu/test_options_golden.cpp
// runs the CPU's.
#include <catch2/catch.hpp>

#include "duet/duet.h"
#include "options_golden.h"

using namespace duet;

TEST_CASE("CUDA cross_entropy's options match PyTorch", "[cuda]") {
  test::check_cross_entropy_golden(cuda_device(0));
}

TEST_CASE("CUDA amin, min, argmin, var and std match PyTorch", "[cuda]") {
  test::check_reductions_golden(cuda_device(0));
}
