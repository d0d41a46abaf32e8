// The NN kernels' operand contract, checked once for every backend by kernels/nn_dispatch.cpp,
// and the layouts the CPU and CUDA kernels share (kernels/nn_layouts.h).
#include <catch2/catch.hpp>

#include "duet/duet.h"
#include "duet/kernels/nn_kernels.h"
#include "duet/kernels/nn_layouts.h"

using namespace duet;
using Catch::Matchers::Contains;

namespace {

Tensor f64_zeros(Shape sizes) { return zeros(std::move(sizes), {.dtype = DType::f64}); }
Tensor i64_zeros(Shape sizes) { return zeros(std::move(sizes), {.dtype = DType::i64}); }

}  // namespace

TEST_CASE("conv2d kernels name the op and each operand they refuse", "[nn][kernels][errors]") {
  const kernels::Conv2dGeometry g{.stride = 1, .padding = 0};
  Tensor x = zeros({2, 3, 5, 5}), w = zeros({4, 3, 3, 3}), out = zeros({2, 4, 3, 3});
  CHECK_NOTHROW(kernels::conv2d_forward(x, w, Tensor(), g, out));
  REQUIRE_THROWS_WITH(kernels::conv2d_forward(x, w, Tensor(), g, zeros({2, 4, 3, 4})),
                      Contains("conv2d_forward: shapes do not match: x f32[2, 3, 5, 5] on cpu:0, weight f32[4, 3, 3, "
                               "3] on cpu:0, out f32[2, 4, 3, 4] on cpu:0, stride 1, padding 0"));
  REQUIRE_THROWS_WITH(kernels::conv2d_forward(x, w, zeros({3}), g, out),
                      Contains("conv2d_forward: bias f32[3] on cpu:0 does not match the 4 filters of weight"));
  REQUIRE_THROWS_WITH(kernels::conv2d_forward(x, f64_zeros({4, 3, 3, 3}), Tensor(), g, out),
                      Contains("conv2d_forward: weight f64[4, 3, 3, 3] on cpu:0 and x f32[2, 3, 5, 5] on cpu:0 have "
                               "different dtypes"));
  REQUIRE_THROWS_WITH(kernels::conv2d_forward(zeros({2, 3, 5, 5}).transpose(2, 3), w, Tensor(), g, out),
                      Contains("conv2d_forward: x f32[2, 3, 5, 5] on cpu:0 is not contiguous"));
  REQUIRE_THROWS_WITH(kernels::conv2d_forward(Tensor(), w, Tensor(), g, out),
                      Contains("conv2d_forward: x is required but undefined"));
  REQUIRE_THROWS_WITH(kernels::conv2d_forward(x, w, Tensor(), {.stride = 0, .padding = 0}, out),
                      Contains("stride 0, padding 0"));
  REQUIRE_THROWS_WITH(kernels::conv2d_backward_input(zeros({2, 4, 3, 3}), w, g, zeros({2, 3, 6, 5})),
                      Contains("conv2d_backward_input: shapes do not match: grad_x f32[2, 3, 6, 5]"));
  REQUIRE_THROWS_WITH(kernels::conv2d_backward_weight(zeros({2, 4, 3, 3}), x, g, zeros({4, 2, 3, 3}), Tensor()),
                      Contains("conv2d_backward_weight: shapes do not match: x f32[2, 3, 5, 5] on cpu:0, "
                               "grad_weight f32[4, 2, 3, 3]"));
  CHECK_NOTHROW(kernels::conv2d_backward_weight(zeros({2, 4, 3, 3}), x, g, zeros(w.sizes()), zeros({4})));
  REQUIRE_THROWS_WITH(kernels::conv2d_backward_weight(zeros({2, 4, 3, 3}), x, g, zeros(w.sizes()), zeros({3})),
                      Contains("conv2d_backward_weight: grad_bias f32[3] on cpu:0 does not match grad_weight "
                               "f32[4, 3, 3, 3]"));
  REQUIRE_THROWS_WITH(kernels::conv2d_backward_weight(zeros({2, 4, 3, 3}), x, g, zeros(w.sizes()), f64_zeros({4})),
                      Contains("have different dtypes"));

  // Groups and per-axis geometry: weight [K, C / groups, kh, kw], K divisible by groups.
  const kernels::Conv2dGeometry grouped{.stride = {2, 1}, .padding = {1, 0}, .dilation = {1, 2}, .groups = 2};
  Tensor gx = zeros({1, 4, 6, 7}), gw = zeros({6, 2, 3, 2});
  CHECK_NOTHROW(kernels::conv2d_forward(gx, gw, Tensor(), grouped, zeros({1, 6, 3, 5})));
  REQUIRE_THROWS_WITH(kernels::conv2d_forward(gx, zeros({6, 4, 3, 2}), Tensor(), grouped, zeros({1, 6, 3, 5})),
                      Contains("weight f32[6, 4, 3, 2] on cpu:0, out f32[1, 6, 3, 5] on cpu:0, stride (2, 1), "
                               "padding (1, 0), dilation (1, 2), groups 2"));
  REQUIRE_THROWS_WITH(kernels::conv2d_forward(zeros({1, 6, 6, 7}), zeros({5, 2, 3, 2}), Tensor(),
                                              {.stride = {2, 1}, .padding = {1, 0}, .dilation = {1, 2}, .groups = 3},
                                              zeros({1, 5, 3, 5})),
                      Contains("conv2d_forward: shapes do not match"));  // 5 filters in 3 groups
  REQUIRE_THROWS_WITH(kernels::conv2d_forward(gx, gw, Tensor(), grouped, zeros({1, 6, 3, 6})),
                      Contains("conv2d_forward: shapes do not match"));  // the dilation's output width is 5
  REQUIRE_THROWS_WITH(kernels::conv2d_forward(gx, gw, Tensor(), {.dilation = 0, .groups = 2}, zeros({1, 6, 3, 5})),
                      Contains("dilation 0, groups 2"));
}

TEST_CASE("the fused convolution and pooling kernels name the op and each operand they refuse",
          "[nn][kernels][errors]") {
  const kernels::Conv2dGeometry conv{};
  const kernels::Pool2dGeometry pool{.kernel = 2, .stride = 2};
  const auto relu = kernels::UnaryOp::relu;
  // x [2, 3, 7, 7] (*) w [4, 3, 3, 3] -> [2, 4, 5, 5], pooled 2x2 -> [2, 4, 2, 2].
  Tensor x = zeros({2, 3, 7, 7}), w = zeros({4, 3, 3, 3}), b = zeros({4}), out = zeros({2, 4, 2, 2});
  CHECK_NOTHROW(kernels::conv2d_avg_pool2d_forward(x, w, b, conv, relu, pool, out));
  REQUIRE_THROWS_WITH(kernels::conv2d_avg_pool2d_forward(x, w, b, conv, relu, pool, zeros({2, 4, 3, 3})),
                      Contains("conv2d_avg_pool2d_forward: shapes do not match: x f32[2, 3, 7, 7] on cpu:0, weight "
                               "f32[4, 3, 3, 3] on cpu:0, out f32[2, 4, 3, 3] on cpu:0, convolution stride 1, "
                               "padding 0, dilation 1, groups 1, pooling kernel 2, stride 2, padding 0"));
  REQUIRE_THROWS_WITH(kernels::conv2d_avg_pool2d_forward(x, zeros({4, 2, 3, 3}), b, conv, relu, pool, out),
                      Contains("conv2d_avg_pool2d_forward: shapes do not match"));
  REQUIRE_THROWS_WITH(kernels::conv2d_avg_pool2d_forward(x, w, zeros({5}), conv, relu, pool, out),
                      Contains("conv2d_avg_pool2d_forward: bias f32[5] on cpu:0 does not match the 4 filters"));
  REQUIRE_THROWS_WITH(kernels::conv2d_avg_pool2d_forward(x, w, b, conv, relu, pool, f64_zeros({2, 4, 2, 2})),
                      Contains("conv2d_avg_pool2d_forward: out f64[2, 4, 2, 2] on cpu:0 and x f32[2, 3, 7, 7]"));
  REQUIRE_THROWS_WITH(kernels::conv2d_avg_pool2d_forward(x, w, b, conv, kernels::UnaryOp::log, pool, out),
                      Contains("conv2d_avg_pool2d_forward: unary op log is not an activation a pooling can fuse"));

  Tensor grad = zeros({2, 4, 2, 2});
  CHECK_NOTHROW(kernels::conv2d_avg_pool2d_backward(grad, x, w, b, conv, relu, pool, zeros(x.sizes()), zeros(w.sizes()),
                                                    zeros({4})));
  CHECK_NOTHROW(kernels::conv2d_avg_pool2d_backward(grad, x, w, Tensor(), conv, std::nullopt, pool, Tensor(),
                                                    zeros(w.sizes()), Tensor()));
  REQUIRE_THROWS_WITH(kernels::conv2d_avg_pool2d_backward(zeros({2, 4, 2, 3}), x, w, b, conv, relu, pool, Tensor(),
                                                          zeros(w.sizes()), Tensor()),
                      Contains("conv2d_avg_pool2d_backward: shapes do not match: x f32[2, 3, 7, 7] on cpu:0, weight "
                               "f32[4, 3, 3, 3] on cpu:0, grad_out f32[2, 4, 2, 3]"));
  REQUIRE_THROWS_WITH(
      kernels::conv2d_avg_pool2d_backward(grad, x, w, b, conv, relu, pool, zeros({2, 3, 7, 6}), Tensor(), Tensor()),
      Contains("conv2d_avg_pool2d_backward: grad_x f32[2, 3, 7, 6] on cpu:0 does not match x"));
  REQUIRE_THROWS_WITH(
      kernels::conv2d_avg_pool2d_backward(grad, x, w, b, conv, relu, pool, Tensor(), zeros({4, 3, 3, 2}), Tensor()),
      Contains("conv2d_avg_pool2d_backward: grad_weight f32[4, 3, 3, 2] on cpu:0 does not match "
               "weight"));
  REQUIRE_THROWS_WITH(
      kernels::conv2d_avg_pool2d_backward(grad, x, w, b, conv, relu, pool, Tensor(), Tensor(), zeros({3})),
      Contains("conv2d_avg_pool2d_backward: grad_bias f32[3] on cpu:0 does not match the 4 filters"));
  REQUIRE_THROWS_WITH(
      kernels::conv2d_avg_pool2d_backward(grad, x, w, b, conv, relu, pool, Tensor(), Tensor(), f64_zeros({4})),
      Contains("have different dtypes"));
}

TEST_CASE("pooling kernels name the op and each operand they refuse", "[nn][kernels][errors]") {
  const kernels::Pool2dGeometry g{.kernel = 2, .stride = 2, .padding = 0};
  Tensor x = zeros({1, 2, 4, 4}), out = zeros({1, 2, 2, 2}), indices = i64_zeros({1, 2, 2, 2});
  CHECK_NOTHROW(kernels::max_pool2d_forward(x, g, out, indices));
  REQUIRE_THROWS_WITH(kernels::max_pool2d_forward(x, g, out, zeros({1, 2, 2, 2})),
                      Contains("max_pool2d_forward: expected indices to be a contiguous i64 tensor, got indices "
                               "f32[1, 2, 2, 2]"));
  REQUIRE_THROWS_WITH(kernels::max_pool2d_forward(x, g, out, i64_zeros({1, 2, 4})),
                      Contains("max_pool2d_forward: indices i64[1, 2, 4] on cpu:0 does not match out f32[1, 2, 2, 2]"));
  REQUIRE_THROWS_WITH(kernels::max_pool2d_forward(x, {.kernel = 3, .stride = 2, .padding = 0}, out, indices),
                      Contains("max_pool2d_forward: out f32[1, 2, 2, 2] on cpu:0 does not match x f32[1, 2, 4, 4] on "
                               "cpu:0 with kernel 3, stride 2, padding 0"));
  // Padding wider than half the window would make windows that lie wholly in the padding.
  REQUIRE_THROWS_WITH(kernels::avg_pool2d_forward(x, {.kernel = 2, .stride = 2, .padding = 2}, {}, zeros({1, 2, 4, 4})),
                      Contains("avg_pool2d_forward: out f32[1, 2, 4, 4]"));
  REQUIRE_THROWS_WITH(kernels::avg_pool2d_backward(zeros({1, 2, 2, 2}), Tensor(), g, {}, zeros({1, 3, 4, 4})),
                      Contains("avg_pool2d_backward: shapes do not match: grad_x f32[1, 3, 4, 4] on cpu:0, grad_out "
                               "f32[1, 2, 2, 2]"));
  // A fused activation's gradient reads x: it must be there, with grad_x's shape and dtype.
  const auto relu = kernels::UnaryOp::relu;
  CHECK_NOTHROW(kernels::avg_pool2d_backward(out, x, g, relu, zeros({1, 2, 4, 4})));
  REQUIRE_THROWS_WITH(kernels::avg_pool2d_backward(out, Tensor(), g, relu, zeros({1, 2, 4, 4})),
                      Contains("activated_avg_pool2d_backward: x is required but undefined"));
  REQUIRE_THROWS_WITH(
      kernels::avg_pool2d_backward(out, zeros({1, 2, 4, 5}), g, relu, zeros({1, 2, 4, 4})),
      Contains("activated_avg_pool2d_backward: x f32[1, 2, 4, 5] on cpu:0 does not match grad_x f32[1, 2, 4, 4]"));
  REQUIRE_THROWS_WITH(kernels::avg_pool2d_backward(out, f64_zeros({1, 2, 4, 4}), g, relu, zeros({1, 2, 4, 4})),
                      Contains("activated_avg_pool2d_backward: grad_x f32[1, 2, 4, 4] on cpu:0 and x f64[1, 2, 4, 4]"));
  REQUIRE_THROWS_WITH(kernels::avg_pool2d_forward(x, g, kernels::UnaryOp::exp, out),
                      Contains("activated_avg_pool2d_forward: unary op exp is not an activation a pooling can "
                               "fuse (relu, sigmoid, tanh)"));
  REQUIRE_THROWS_WITH(kernels::avg_pool2d_backward(out, x, g, kernels::UnaryOp::neg, zeros({1, 2, 4, 4})),
                      Contains("activated_avg_pool2d_backward: unary op neg is not an activation a pooling can fuse"));
  REQUIRE_THROWS_WITH(kernels::max_pool2d_backward(zeros({1, 2, 2, 2}), indices, g, zeros({1, 2, 7, 4})),
                      Contains("max_pool2d_backward: grad_out f32[1, 2, 2, 2] on cpu:0 does not match grad_x"));
  REQUIRE_THROWS_WITH(kernels::max_pool2d_forward(x, {.kernel = 2, .stride = 2, .divisor_override = 3}, out, indices),
                      Contains("max_pool2d_forward: max pooling takes no divisor_override, got kernel 2, stride 2, "
                               "padding 0, divisor_override 3"));
  REQUIRE_THROWS_WITH(
      kernels::avg_pool2d_forward(x, {.kernel = 2, .stride = 2, .dilation = {1, 2}}, std::nullopt, zeros({1, 2, 2, 1})),
      Contains(
          "avg_pool2d_forward: average pooling takes no dilation, got kernel 2, stride 2, padding 0, dilation (1, 2)"));
  REQUIRE_THROWS_WITH(kernels::max_pool2d_backward(zeros({1, 2, 2, 2}), indices, std::nullopt, f64_zeros({1, 2, 4, 4})),
                      Contains("max_pool2d_backward: grad_x f64[1, 2, 4, 4] on cpu:0 and grad_out f32[1, 2, 2, 2] on "
                               "cpu:0 have different dtypes"));
  REQUIRE_THROWS_WITH(kernels::adaptive_avg_pool2d_forward(zeros({2, 4, 4}), out),
                      Contains("adaptive_avg_pool2d_forward: shapes do not match: x f32[2, 4, 4]"));

  // ceil_mode: out's size must follow PyTorch's rounding up.
  const kernels::Pool2dGeometry ceil{.kernel = 3, .stride = 2, .padding = 1, .ceil_mode = true};
  CHECK_NOTHROW(kernels::avg_pool2d_forward(zeros({1, 1, 8, 7}), ceil, {}, zeros({1, 1, 5, 4})));
  REQUIRE_THROWS_WITH(kernels::avg_pool2d_forward(zeros({1, 1, 8, 7}), ceil, {}, zeros({1, 1, 4, 4})),
                      Contains("avg_pool2d_forward: out f32[1, 1, 4, 4] on cpu:0 does not match x f32[1, 1, 8, 7] on "
                               "cpu:0 with kernel 3, stride 2, padding 1, ceil_mode"));
  REQUIRE_THROWS_WITH(
      kernels::max_pool2d_forward(x, {.kernel = {3, 2}, .stride = {1, 2}, .padding = {2, 0}}, out, indices),
      Contains("with kernel (3, 2), stride (1, 2), padding (2, 0)"));  // padding above half the kernel
  // adaptive max: i64 indices of out's shape, and a plane to take maxima from.
  CHECK_NOTHROW(kernels::adaptive_max_pool2d_forward(x, zeros({1, 2, 3, 1}), i64_zeros({1, 2, 3, 1})));
  REQUIRE_THROWS_WITH(kernels::adaptive_max_pool2d_forward(x, zeros({1, 2, 3, 1}), i64_zeros({1, 2, 1, 3})),
                      Contains("adaptive_max_pool2d_forward: indices i64[1, 2, 1, 3] on cpu:0 does not match out"));
  // Refused (today as not contiguous, since Tensor::is_contiguous says so of an empty tensor; the
  // kernel's own empty-plane check stands behind that).
  REQUIRE_THROWS_WITH(
      kernels::adaptive_max_pool2d_forward(zeros({1, 2, 0, 4}), zeros({1, 2, 3, 1}), i64_zeros({1, 2, 3, 1})),
      Contains("adaptive_max_pool2d_forward: x f32[1, 2, 0, 4] on cpu:0"));
}

// PyTorch's pooling_output_shape: ceil_mode rounds up, unless the last window would start in the
// right padding. Values from torch.nn.functional.max_pool2d(..., ceil_mode=True).shape.
TEST_CASE("window_output_size follows PyTorch's floor and ceil modes and dilation", "[nn][kernels]") {
  CHECK(kernels::window_output_size(8, 3, 2, 1) == 4);
  CHECK(kernels::window_output_size(8, 3, 2, 1, 1, true) == 5);
  CHECK(kernels::window_output_size(5, 3, 3, 1) == 2);
  CHECK(kernels::window_output_size(5, 3, 3, 1, 1, true) == 2);  // a third window would start in the padding
  CHECK(kernels::window_output_size(5, 2, 2, 0, 1, true) == 3);
  CHECK(kernels::window_output_size(6, 2, 2, 0, 1, true) == 3);  // no remainder: no extra window
  CHECK(kernels::window_output_size(2, 3, 1, 0, 1, true) == 0);  // does not fit in either mode
  // Dilation 2 spreads a 3-tap kernel over 5 positions: torch.nn.functional.conv2d's output width.
  CHECK(kernels::window_output_size(9, 3, 1, 0, 2) == 5);
  CHECK(kernels::window_output_size(9, 3, 2, 2, 3) == 4);
  CHECK(kernels::window_output_size(4, 3, 1, 0, 2) == 0);
}

// An average's divisor per axis, as PyTorch's avg_pool2d divides: the window within the padded
// input (count_include_pad), or within the input.
TEST_CASE("a pooling axis's divisor counts the padding, or not, and stops at the padded edge", "[nn][kernels]") {
  // in 8, kernel 3, stride 2, padding 1, ceil mode: 5 windows starting at -1, 1, 3, 5, 7.
  const auto with_pad = kernels::AxisWindows::sliding(8, 5, 3, 2, 1, true);
  const auto without_pad = kernels::AxisWindows::sliding(8, 5, 3, 2, 1, false);
  for (int64_t o = 0; o < 4; ++o) CHECK(with_pad.divisor(o) == 3);
  CHECK(with_pad.divisor(4) == 2);     // [7, 10) reaches past the padded input's end, 9
  CHECK(without_pad.divisor(0) == 2);  // [-1, 2) holds 2 input elements
  CHECK(without_pad.divisor(2) == 3);
  CHECK(without_pad.divisor(4) == 1);                             // [7, 10) holds only element 7
  const auto adaptive = kernels::AxisWindows::adaptive_to(7, 3);  // [0, 3), [2, 5), [4, 7)
  CHECK(adaptive.divisor(1) == 3);
  // A window's divisor is its rows' times its columns'.
  const kernels::PoolLayout layout{2, with_pad, adaptive};
  CHECK(layout.divisor(4, 1) == 2 * 3);
}

// The CUDA pooling kernels take one flat index per thread and find its plane, row and column.
TEST_CASE("a pooling layout finds the plane, row and column of a flat index", "[nn][kernels]") {
  // x [2, 3, 5, 7] pooled to out [2, 3, 4, 6]: 6 planes.
  const kernels::PoolLayout g{6, kernels::AxisWindows::adaptive_to(5, 4), kernels::AxisWindows::adaptive_to(7, 6)};
  const int64_t o = (4 * 4 + 3) * 6 + 5, i = (2 * 5 + 1) * 7 + 6;
  CHECK(g.output_at(o).plane == 4);
  CHECK(g.output_at(o).row == 3);
  CHECK(g.output_at(o).col == 5);
  CHECK(g.input_at(i).plane == 2);
  CHECK(g.input_at(i).row == 1);
  CHECK(g.input_at(i).col == 6);
  CHECK(g.output_at(0).plane == 0);
  CHECK(g.input_at(6 * 5 * 7 - 1).plane == 5);
}

TEST_CASE("batch norm kernels name the op and each operand they refuse", "[nn][kernels][errors]") {
  Tensor x = zeros({4, 3, 2, 2}), out = zeros({4, 3, 2, 2}), mean = zeros({3}), invstd = zeros({3});
  CHECK_NOTHROW(
      kernels::batch_norm_forward(x, Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5, out, mean, invstd));
  REQUIRE_THROWS_WITH(
      kernels::batch_norm_forward(x, zeros({4}), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5, out, mean, invstd),
      Contains("batch_norm_forward: weight f32[4] on cpu:0 does not match the 3 channels of x f32[4, "
               "3, 2, 2] on cpu:0 (expected shape [3])"));
  REQUIRE_THROWS_WITH(
      kernels::batch_norm_forward(x, Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5, out, Tensor(), invstd),
      Contains("batch_norm_forward: save_mean is required but undefined"));
  REQUIRE_THROWS_WITH(
      kernels::batch_norm_forward(x, Tensor(), Tensor(), Tensor(), Tensor(), false, 0.1, 1e-5, out, mean, invstd),
      Contains("batch_norm_forward: inference needs running_mean and running_var"));
  REQUIRE_THROWS_WITH(kernels::batch_norm_forward(zeros({1, 3}), Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1,
                                                  1e-5, zeros({1, 3}), mean, invstd),
                      Contains("batch_norm_forward: expected more than 1 value per channel when training"));
  REQUIRE_THROWS_WITH(kernels::batch_norm_forward(zeros({4, 3, 2}), Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1,
                                                  1e-5, zeros({4, 3, 2}), mean, invstd),
                      Contains("batch_norm_forward: expected x of shape [N, C] or [N, C, H, W], got f32[4, 3, 2]"));
  REQUIRE_THROWS_WITH(kernels::batch_norm_backward(zeros({4, 3, 2, 2}), x, Tensor(), mean, invstd, true,
                                                   zeros({4, 3, 2, 1}), Tensor(), Tensor()),
                      Contains("batch_norm_backward: grad_x f32[4, 3, 2, 1] on cpu:0 does not match x f32[4, 3, 2, "
                               "2]"));
  // Nothing wanted: nothing to check or compute.
  CHECK_NOTHROW(kernels::batch_norm_backward(Tensor(), Tensor(), Tensor(), Tensor(), Tensor(), true, Tensor(), Tensor(),
                                             Tensor()));
}

TEST_CASE("softmax and cross-entropy kernels name the op and each operand they refuse", "[nn][kernels][errors]") {
  REQUIRE_THROWS_WITH(kernels::softmax_forward(zeros({2, 3}), 2, zeros({2, 3})),
                      Contains("softmax_forward: dim 2 out of range for x f32[2, 3]"));
  REQUIRE_THROWS_WITH(kernels::log_softmax_backward(zeros({2, 3}), zeros({2, 3}), 1, zeros({3, 2})),
                      Contains("log_softmax_backward: grad_x f32[3, 2] on cpu:0 does not match out f32[2, 3]"));
  REQUIRE_THROWS_WITH(kernels::softmax_forward(i64_zeros({2, 3}), 1, i64_zeros({2, 3})),
                      Contains("softmax_forward: expected a floating dtype (f32 or f64), got x i64[2, 3]"));
  Tensor logits = zeros({4, 3}), losses = zeros({4}), log_probs = zeros({4, 3}), total = zeros({});
  const kernels::CrossEntropyTerms terms;
  REQUIRE_THROWS_WITH(kernels::cross_entropy_forward(logits, i64_zeros({3}), Tensor(), terms, losses, log_probs, total),
                      Contains("cross_entropy_forward: shapes do not match: logits f32[4, 3] on cpu:0, target i64[3] "
                               "on cpu:0, losses f32[4] on cpu:0"));
  REQUIRE_THROWS_WITH(
      kernels::cross_entropy_forward(logits, i64_zeros({4}), Tensor(), terms, losses, zeros({4, 2}), total),
      Contains("cross_entropy_forward: log_probs f32[4, 2] on cpu:0 does not match logits"));
  REQUIRE_THROWS_WITH(
      kernels::cross_entropy_forward(logits, i64_zeros({4}), zeros({2}), terms, losses, log_probs, total),
      Contains("cross_entropy_forward: weight f32[2] on cpu:0 does not match the 3 classes of logits"));
  REQUIRE_THROWS_WITH(
      kernels::cross_entropy_forward(logits, i64_zeros({4}), Tensor(), terms, losses, log_probs, zeros({1})),
      Contains("cross_entropy_forward: expected total_weight of shape [], got f32[1]"));
  REQUIRE_THROWS_WITH(kernels::cross_entropy_forward(logits, i64_zeros({4}), Tensor(), {.label_smoothing = 1.5}, losses,
                                                     log_probs, total),
                      Contains("cross_entropy_forward: label_smoothing must be in [0, 1], got 1.5"));
  // [N, C, d] logits take [N, d] targets and losses.
  REQUIRE_THROWS_WITH(kernels::cross_entropy_forward(zeros({4, 3, 2}), i64_zeros({4, 3}), Tensor(), terms,
                                                     zeros({4, 3}), zeros({4, 3, 2}), total),
                      Contains("cross_entropy_forward: shapes do not match: logits f32[4, 3, 2]"));
  REQUIRE_THROWS_WITH(
      kernels::cross_entropy_backward(zeros({4}), log_probs, zeros({4}), Tensor(), terms, zeros({4, 3})),
      Contains("cross_entropy_backward: expected target to be a contiguous i64 tensor"));
  // The targets' values are the kernel's to check: only it reads their memory.
  REQUIRE_THROWS_WITH(kernels::cross_entropy_forward(logits, from_vector<int64_t>({0, 1, 3, 2}), Tensor(), terms,
                                                     losses, log_probs, total),
                      Contains("cross_entropy_forward: target[2] = 3 is out of range for 3 classes (expected 0 <= "
                               "target < 3, or ignore_index -100)"));
  REQUIRE_THROWS_WITH(kernels::cross_entropy_forward(logits, from_vector<int64_t>({0, 1, -100, -1}), Tensor(), terms,
                                                     losses, log_probs, total),
                      Contains("target[3] = -1 is out of range"));
}

// The CUDA pooling backwards gather each input's gradient from the outputs that
// outputs_covering() names; every output whose window has the input as a tap must be among them.
TEST_CASE("a pooling axis's covering outputs include every window that holds an input", "[nn][kernels]") {
  std::vector<kernels::AxisWindows> axes;
  for (int64_t in : {1, 5, 7, 12})
    for (int64_t kernel : {1, 2, 3, 5})
      for (int64_t stride : {1, 2, 3})
        for (int64_t padding = 0; 2 * padding <= kernel; ++padding)
          for (int64_t dilation : {1, 2, 3})
            for (bool ceil_mode : {false, true}) {
              const int64_t out = kernels::window_output_size(in, kernel, stride, padding, dilation, ceil_mode);
              if (out < 1) continue;
              const auto axis = kernels::AxisWindows::sliding(in, out, kernel, stride, padding, true, dilation);
              if (axis.windows_hold_input()) axes.push_back(axis);
            }
  for (int64_t in : {1, 4, 7, 13})
    for (int64_t out : {1, 2, 3, 6, 13, 20}) axes.push_back(kernels::AxisWindows::adaptive_to(in, out));
  for (const kernels::AxisWindows& a : axes) {
    for (int64_t i = 0; i < a.in; ++i) {
      const kernels::Window covering = a.outputs_covering(i);
      for (int64_t o = 0; o < a.out; ++o) {
        const kernels::Window w = a.at(o);
        if (i < w.begin || i >= w.end || (i - w.begin) % w.step != 0) continue;
        INFO("in " << a.in << ", out " << a.out << ", kernel " << a.kernel << ", stride " << a.stride << ", padding "
                   << a.padding << ", dilation " << a.dilation << (a.adaptive ? ", adaptive" : "") << ": input " << i
                   << ", output " << o);
        CHECK((o >= covering.begin && o < covering.end));
      }
    }
  }
}
