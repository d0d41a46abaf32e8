// cuDNN itself ([cudnn]: registered with --requires-cudnn, so a build without cuDNN skips them
// with exit 77, saying why). Convolution's comparisons with the CPU are in test_cuda_nn.cpp and
// run in every CUDA build, through cuDNN or through im2col.
#include <catch2/catch.hpp>

#include "cuda_test_util.h"
#include "duet/kernels/cuda/conv2d.h"
#include "duet/kernels/cuda/runtime.h"

using namespace duet;
using Catch::Matchers::Contains;

// A cuDNN failure other than "not supported" (here BAD_PARAM: a null input pointer) is an error
// that names the layer, not a quiet step to the next algorithm and then to im2col, which would
// hide it (and, before, dropped every algorithm of that shape for the rest of the process).
TEST_CASE("a cuDNN convolution failure other than not-supported throws, naming the shapes", "[cuda][cudnn]") {
  REQUIRE(cuda::cudnn_is_built());
  const Device gpu = cuda_device(0);
  const kernels::Conv2dGeometry geometry{};
  const Tensor weight = test::empty_tensor({5, 3, 3, 3}, DType::f32, gpu);
  const Tensor out = test::empty_tensor({2, 5, 9, 7}, DType::f32, gpu);
  const Tensor shaped_x = test::empty_tensor({2, 3, 11, 9}, DType::f32, gpu);
  const kernels::ConvLayout g = kernels::ConvLayout::of(shaped_x, weight, out, geometry);
  const Tensor no_data = test::empty_tensor({0}, DType::f32, gpu);  // null data pointer
  REQUIRE(no_data.data_ptr() == nullptr);
  CHECK_THROWS_WITH(cuda::cudnn_conv2d_forward(g, no_data, weight, out, gpu),
                    Contains("input [2, 3, 11, 9], weight [5, 3, 3, 3]") && Contains("cuDNN error"));
  // The layer still runs afterwards with real data: nothing was dropped for good.
  CHECK(cuda::cudnn_conv2d_forward(g, shaped_x, weight, out, gpu));
  cuda::synchronize(gpu);
}
