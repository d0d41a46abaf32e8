// bench/cpu/flop_count.h: FLOPs per image from the layer shapes, grouped and dilated convolutions
// included.
#include <catch2/catch.hpp>

#include "duet/duet.h"
#include "duet/nn/layers.h"
#include "flop_count.h"

using namespace duet;

TEST_CASE("count_flops counts each output's multiply-adds, grouped and dilated convolutions too", "[bench]") {
  // conv 1->4 3x3 pad 1: 4x28x28 outputs of 1*3*3 multiply-adds. conv 4->8 3x3 in 4 groups,
  // dilation 2: 8x24x24 outputs (the taps span 5x5) of 4/4*3*3. Linear 8*24*24 -> 10.
  nn::Sequential net(nn::Conv2d(nn::Conv2dOptions(1, 4, 3).padding(1)),
                     nn::Conv2d(nn::Conv2dOptions(4, 8, 3).groups(4).dilation(2)), nn::Flatten(),
                     nn::Linear(8 * 24 * 24, 10));
  const int64_t conv1 = 2 * 4 * 28 * 28 * 9, conv2 = 2 * 8 * 24 * 24 * 9, linear = 2 * 10 * 8 * 24 * 24;
  const bench::FlopCount count = bench::count_flops(*net);
  CHECK(count.forward == conv1 + conv2 + linear);
  CHECK(count.backward == conv1 + 2 * conv2 + 2 * linear);  // no input gradient for the first layer
}
