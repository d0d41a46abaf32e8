// The direct convolution kernels (kernels/cpu/conv2d_direct.h), each way their vectors run (along
// the grid's outputs, along the filters, or for the input gradient along the weights' columns, as
// the shapes below select), against the reference path, im2col + GEMM (DUET_CONV_IM2COL=1), on
// odd shapes: padding, non-square kernels, channel and filter counts that are not multiples of the
// vector width (16 floats, 8 doubles), images whose output rows span several vectors or less than
// one, and batch 1; then gradchecks through conv2d.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "duet/duet.h"
#include "duet/kernels/cpu/conv2d_direct.h"
#include "duet/kernels/nn_kernels.h"
#include "duet/nn/functional.h"

using namespace duet;
namespace F = duet::nn::functional;

namespace {

struct DirectCase {
  Shape x, w;  // [N, C, H, W], [K, C, kh, kw]
  PerAxis padding;
};

const std::vector<DirectCase> kCases = {
    {{1, 1, 28, 28}, {6, 1, 5, 5}, 2},     // LeNet's first layer, batch 1
    {{3, 6, 14, 14}, {16, 6, 5, 5}, 0},    // LeNet's second layer: one vector of filters
    {{2, 4, 9, 9}, {20, 4, 5, 5}, 0},      // 20 filters: one vector along the filters, 4 on the grid
    {{2, 20, 13, 13}, {50, 20, 5, 5}, 0},  // LeNet-ReLU's second: 50 filters, blocks of 8 and a tail of 2
    {{2, 3, 7, 9}, {5, 3, 3, 2}, {1, 0}},  // non-square kernel, padding on one axis
    {{1, 17, 5, 4}, {9, 17, 1, 1}, 0},     // pointwise, 17 channels
    {{2, 2, 3, 3}, {3, 2, 3, 3}, 0},       // a kernel as big as the image: one output
    {{2, 1, 40, 37}, {1, 1, 3, 3}, 1},     // one filter; rows wider than two vectors
    {{1, 5, 6, 6}, {7, 5, 4, 4}, 3},       // the largest padding that fits (kernel - 1)
    // The input gradient's GEMM (32 filters or more): padding, a non-square kernel, 7 channels;
    // then more output pixels than one block of its GEMM (96).
    {{2, 7, 6, 5}, {33, 7, 3, 2}, 1},
    {{1, 3, 12, 11}, {40, 3, 3, 3}, 1},
};

std::string describe(const DirectCase& c) {
  return detail::concat("x ", shape_str(c.x), " w ", shape_str(c.w), " padding ", c.padding);
}

Tensor uniform(const Shape& shape, DType dtype, uint64_t seed) {
  Generator g(seed);
  return rand(shape, {.dtype = dtype}, &g) * 2.0 - 1.0;
}

// |a - b| within `tolerance` of the largest |b| (each element is a sum of products of values in
// [-1, 1]; the two paths add them in different orders).
void check_same(const Tensor& a, const Tensor& b, double tolerance) {
  const std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>();
  REQUIRE(av.size() == bv.size());
  double scale = 1;
  for (double v : bv) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < av.size(); ++i) REQUIRE(std::abs(av[i] - bv[i]) <= tolerance * scale);
}

// The three passes on the im2col path, through the kernel table (the bias gradient there is a
// reduction of its own).
struct Passes {
  Tensor out, grad_x, grad_w, grad_b;
};
Passes im2col_passes(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& g,
                     const kernels::Conv2dGeometry& geometry) {
  setenv("DUET_CONV_IM2COL", "1", 1);
  Passes p{empty_like(g), empty_like(x), empty_like(w), empty_like(b)};
  kernels::conv2d_forward(x, w, b, geometry, p.out);
  kernels::conv2d_backward_input(g, w, geometry, p.grad_x);
  kernels::conv2d_backward_weight(g, x, geometry, p.grad_w, p.grad_b);
  unsetenv("DUET_CONV_IM2COL");
  return p;
}

template <class T> void check_case(const DirectCase& c, DType dtype, double tolerance) {
  kernels::Conv2dGeometry geometry;
  geometry.padding = c.padding;
  Tensor x = uniform(c.x, dtype, 1), w = uniform(c.w, dtype, 2), b = uniform({c.w[0]}, dtype, 3);
  const PerAxis out = kernels::conv2d_output_size(geometry, {c.x[2], c.x[3]}, {c.w[2], c.w[3]});
  Tensor g = uniform({c.x[0], c.w[0], out.h, out.w}, dtype, 4);
  const kernels::ConvLayout layout = kernels::ConvLayout::of(x, w, g, geometry);
  REQUIRE(kernels::cpu::direct_conv_fits(layout));
  const Passes reference = im2col_passes(x, w, b, g, geometry);
  Passes direct{empty_like(g), empty_like(x), empty_like(w), empty_like(b)};
  kernels::cpu::direct_conv_forward<T>(layout, x.data<T>(), w.data<T>(), b.data<T>(), direct.out.data<T>());
  kernels::cpu::direct_conv_backward_input<T>(layout, g.data<T>(), w.data<T>(), direct.grad_x.data<T>());
  kernels::cpu::direct_conv_backward_weight<T>(layout, g.data<T>(), x.data<T>(), direct.grad_w.data<T>(),
                                               direct.grad_b.data<T>());
  check_same(direct.out, reference.out, tolerance);
  check_same(direct.grad_x, reference.grad_x, tolerance);
  check_same(direct.grad_w, reference.grad_w, tolerance);
  check_same(direct.grad_b, reference.grad_b, tolerance);
  // Without a bias gradient the weight gradient is the same.
  Tensor grad_w_alone = empty_like(w);
  kernels::cpu::direct_conv_backward_weight<T>(layout, g.data<T>(), x.data<T>(), grad_w_alone.data<T>(), nullptr);
  check_same(grad_w_alone, direct.grad_w, 0);
}

}  // namespace

TEST_CASE("the direct convolution matches im2col + GEMM on odd shapes, in f32 and f64", "[nn][conv_direct]") {
  for (const DirectCase& c : kCases) {
    INFO(describe(c));
    check_case<float>(c, DType::f32, 1e-5);
    check_case<double>(c, DType::f64, 1e-12);
  }
}

TEST_CASE("convolutions the direct kernels cannot compute stay on im2col + GEMM", "[nn][conv_direct]") {
  const auto fits = [](kernels::Conv2dGeometry geometry, Shape w) {
    Tensor x = empty({1, w[1] * geometry.groups, 9, 9});
    const PerAxis out = kernels::conv2d_output_size(geometry, {9, 9}, {w[2], w[3]});
    return kernels::cpu::direct_conv_fits(
        kernels::ConvLayout::of(x, empty(w), empty({1, w[0], out.h, out.w}), geometry));
  };
  CHECK(fits({}, {4, 3, 3, 3}));
  CHECK_FALSE(fits({.stride = 2}, {4, 3, 3, 3}));
  CHECK_FALSE(fits({.stride = {1, 2}}, {4, 3, 3, 3}));
  CHECK_FALSE(fits({.dilation = 2}, {4, 3, 3, 3}));
  CHECK_FALSE(fits({.groups = 3}, {3, 1, 3, 3}));
  CHECK_FALSE(fits({.padding = 3}, {4, 3, 3, 3}));  // the input gradient would need padding -1
  CHECK(fits({.padding = {2, 0}}, {4, 3, 3, 1}));   // kernel - 1 on each axis
}

TEST_CASE("conv2d gradcheck on the direct kernels' shapes", "[nn][conv_direct][gradcheck]") {
  const std::vector<DirectCase> cases = {
      {{1, 1, 6, 7}, {3, 1, 3, 3}, 1},        // batch 1, one channel, same padding
      {{2, 3, 5, 4}, {17, 3, 2, 3}, {1, 2}},  // 17 filters: a block of 8, 8 and 1
      {{2, 9, 4, 4}, {2, 9, 4, 4}, 0},        // one output pixel per filter
      // 33 filters and 64 taps: along the filters with one filter left to the grid (forward and
      // weight gradient), and the input gradient's GEMM.
      {{1, 4, 5, 5}, {33, 4, 4, 4}, 1},
  };
  for (const DirectCase& c : cases) {
    INFO(describe(c));
    const F::Conv2dParams params{.padding = c.padding};
    Tensor x = uniform(c.x, DType::f64, 5).requires_grad_(), w = uniform(c.w, DType::f64, 6).requires_grad_();
    Tensor b = uniform({c.w[0]}, DType::f64, 7).requires_grad_();
    GradcheckResult result = gradcheck(
        [params](const std::vector<Tensor>& in) { return F::conv2d(in[0], in[1], in[2], params); }, {x, w, b});
    INFO(result.message);
    CHECK(result.ok);
  }
}
