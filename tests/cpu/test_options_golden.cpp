// duet against PyTorch 1.13 on the options of tests/golden/options.safetensors
// (tools/make_options_golden.py); the cases live in the file and run through
// tests/options_golden.cpp, which tests/cuda/test_cuda_options.cpp runs on a GPU too.
#include <catch2/catch.hpp>

#include "duet/duet.h"
#include "options_golden.h"

using namespace duet;

TEST_CASE("cross_entropy's ignore_index, weight, label_smoothing and [N, C, d] logits match PyTorch",
          "[golden][parity][nn]") {
  test::check_cross_entropy_golden(cpu());
}

TEST_CASE("amin, min, argmin, var and std over dims match PyTorch, gradients included", "[golden][parity]") {
  test::check_reductions_golden(cpu());
}

TEST_CASE("SGD, Adam and AdamW with maximize follow torch.optim's trajectory over 10 steps",
          "[golden][parity][optim]") {
  test::check_maximize_golden(cpu());
}

TEST_CASE("Adam and AdamW with amsgrad match torch.optim, per-parameter steps included", "[golden][parity][optim]") {
  test::check_amsgrad_golden(cpu());
}

TEST_CASE("BatchNorm2d with momentum None keeps PyTorch's cumulative average", "[golden][parity][nn]") {
  test::check_cumulative_batch_norm_golden(cpu());
}
