// nn::functional: gradcheck of every op (f64), forward values against naive reference loops
// (f32, odd shapes), batch-norm running statistics, dropout masks, and the error messages.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "duet/duet.h"
#include "duet/kernels/backend.h"
#include "duet/kernels/cuda/runtime.h"
#include "duet/nn/functional.h"

using namespace duet;
namespace F = duet::nn::functional;
using Catch::Matchers::Contains;

namespace {

using Inputs = std::vector<Tensor>;
using Fn = std::function<Tensor(const Inputs&)>;
using Values = std::vector<double>;

uint64_t next_seed() {
  static uint64_t seed = 1000;
  return seed++;
}

// Uniform in [lo, hi), a plain tensor (not yet a leaf requiring grad).
Tensor uniform(Shape shape, double lo = -1, double hi = 1, DType dtype = DType::f64) {
  Generator g(next_seed());
  NoGradGuard no_grad;
  return rand(std::move(shape), {.dtype = dtype}, &g) * (hi - lo) + lo;
}

Tensor leaf(Tensor t) {
  t.requires_grad_();
  return t;
}

Tensor input(Shape shape, double lo = -1, double hi = 1) { return leaf(uniform(std::move(shape), lo, hi)); }

// Distinct values 0.05 apart, shuffled: no two elements of a pooling window are within the
// finite-difference step of each other, so the arg-max never flips.
Tensor distinct(Shape shape) {
  Values v(static_cast<size_t>(numel(shape)));
  std::iota(v.begin(), v.end(), 0.0);
  std::shuffle(v.begin(), v.end(), std::mt19937(static_cast<unsigned>(next_seed())));
  for (double& x : v) x = 0.05 * x - 1;
  return leaf(from_vector<double>(v, std::move(shape)));
}

void check_gradient(const Fn& fn, const Inputs& inputs) {
  GradcheckResult result = gradcheck(fn, inputs);
  INFO(result.message);
  CHECK(result.ok);
}

void check_close(const Tensor& actual, const Values& expected, double tolerance = 1e-4) {
  Values got = actual.to_vector<double>();
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(got[i] == Approx(expected[i]).margin(tolerance).epsilon(tolerance));
  }
}

// ---- naive references ----

struct Dims4 {
  int64_t n, c, h, w;
  explicit Dims4(const Tensor& t) : n(t.size(0)), c(t.size(1)), h(t.size(2)), w(t.size(3)) {}
  int64_t at(int64_t in, int64_t ic, int64_t ih, int64_t iw) const { return ((in * c + ic) * h + ih) * w + iw; }
};

// PyTorch's conv2d, spelled out: filter k reads the C / groups channels of its group.
Values naive_conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const F::Conv2dParams& p) {
  const Dims4 xs(x), ws(weight);
  const Values xv = x.to_vector<double>(), wv = weight.to_vector<double>();
  const Values bv = bias.defined() ? bias.to_vector<double>() : Values(static_cast<size_t>(ws.n), 0.0);
  const int64_t group_filters = ws.n / p.groups;
  const int64_t out_h = (xs.h + 2 * p.padding.h - p.dilation.h * (ws.h - 1) - 1) / p.stride.h + 1;
  const int64_t out_w = (xs.w + 2 * p.padding.w - p.dilation.w * (ws.w - 1) - 1) / p.stride.w + 1;
  Values out;
  for (int64_t n = 0; n < xs.n; ++n)
    for (int64_t k = 0; k < ws.n; ++k)
      for (int64_t oh = 0; oh < out_h; ++oh)
        for (int64_t ow = 0; ow < out_w; ++ow) {
          double acc = bv[static_cast<size_t>(k)];
          for (int64_t c = 0; c < ws.c; ++c)
            for (int64_t i = 0; i < ws.h; ++i)
              for (int64_t j = 0; j < ws.w; ++j) {
                const int64_t ic = (k / group_filters) * ws.c + c;
                const int64_t ih = oh * p.stride.h - p.padding.h + i * p.dilation.h;
                const int64_t iw = ow * p.stride.w - p.padding.w + j * p.dilation.w;
                if (ih < 0 || ih >= xs.h || iw < 0 || iw >= xs.w) continue;
                acc += xv[static_cast<size_t>(xs.at(n, ic, ih, iw))] * wv[static_cast<size_t>(ws.at(k, c, i, j))];
              }
          out.push_back(acc);
        }
  return out;
}

// PyTorch's pooling_output_shape, spelled out.
int64_t naive_pool_size(int64_t in, int64_t kernel, int64_t stride, int64_t padding, int64_t dilation, bool ceil_mode) {
  int64_t out = (in + 2 * padding - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0)) / stride + 1;
  if (ceil_mode && (out - 1) * stride >= in + padding) --out;
  return out;
}

// Max or average over each window's taps (dilation apart), as PyTorch's CPU loops: the average
// divides by divisor_override, or by the window clipped to the padded input (count_include_pad),
// or by the input elements in it. A stride of 0 is the kernel's.
Values naive_pool2d(const Tensor& x, F::Pool2dParams p, bool average) {
  const Dims4 xs(x);
  const Values xv = x.to_vector<double>();
  if (p.stride.h == 0) p.stride.h = p.kernel.h;
  if (p.stride.w == 0) p.stride.w = p.kernel.w;
  const int64_t out_h = naive_pool_size(xs.h, p.kernel.h, p.stride.h, p.padding.h, p.dilation.h, p.ceil_mode);
  const int64_t out_w = naive_pool_size(xs.w, p.kernel.w, p.stride.w, p.padding.w, p.dilation.w, p.ceil_mode);
  Values out;
  for (int64_t plane = 0; plane < xs.n * xs.c; ++plane)
    for (int64_t oh = 0; oh < out_h; ++oh)
      for (int64_t ow = 0; ow < out_w; ++ow) {
        const int64_t h0 = oh * p.stride.h - p.padding.h, w0 = ow * p.stride.w - p.padding.w;
        const int64_t h1 = std::min(h0 + p.kernel.h, xs.h + p.padding.h);
        const int64_t w1 = std::min(w0 + p.kernel.w, xs.w + p.padding.w);
        double acc = average ? 0 : -INFINITY;
        int64_t inside = 0;
        for (int64_t kh = 0; kh < p.kernel.h; ++kh)
          for (int64_t kw = 0; kw < p.kernel.w; ++kw) {
            const int64_t ih = h0 + kh * p.dilation.h, iw = w0 + kw * p.dilation.w;
            if (ih < 0 || ih >= xs.h || iw < 0 || iw >= xs.w) continue;
            const double v = xv[static_cast<size_t>((plane * xs.h + ih) * xs.w + iw)];
            acc = average ? acc + v : std::max(acc, v);
            ++inside;
          }
        const int64_t divisor = p.divisor_override != 0 ? p.divisor_override
                                : p.count_include_pad   ? (h1 - h0) * (w1 - w0)
                                                        : inside;
        out.push_back(average ? acc / static_cast<double>(divisor) : acc);
      }
  return out;
}

// Average (or max) over output cell (oh, ow)'s region [floor(oh * H / Ho), ceil((oh + 1) * H / Ho))
// x [floor(ow * W / Wo), ceil((ow + 1) * W / Wo)).
Values naive_adaptive_pool2d(const Tensor& x, PerAxis size, bool average) {
  const Dims4 xs(x);
  const Values xv = x.to_vector<double>();
  Values out;
  for (int64_t p = 0; p < xs.n * xs.c; ++p)
    for (int64_t oh = 0; oh < size.h; ++oh)
      for (int64_t ow = 0; ow < size.w; ++ow) {
        const int64_t h0 = oh * xs.h / size.h, h1 = ((oh + 1) * xs.h + size.h - 1) / size.h;
        const int64_t w0 = ow * xs.w / size.w, w1 = ((ow + 1) * xs.w + size.w - 1) / size.w;
        double acc = average ? 0 : -INFINITY;
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) {
            const double v = xv[static_cast<size_t>((p * xs.h + ih) * xs.w + iw)];
            acc = average ? acc + v : std::max(acc, v);
          }
        out.push_back(average ? acc / static_cast<double>((h1 - h0) * (w1 - w0)) : acc);
      }
  return out;
}

// Per-channel mean and biased variance of x [N, C, S...].
std::pair<Values, Values> channel_stats(const Tensor& x) {
  const Values xv = x.to_vector<double>();
  const int64_t n = x.size(0), c = x.size(1), s = x.numel() / (n * c);
  Values mean(static_cast<size_t>(c), 0.0), var(static_cast<size_t>(c), 0.0);
  for (int64_t ch = 0; ch < c; ++ch) {
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < s; ++i) mean[ch] += xv[static_cast<size_t>((b * c + ch) * s + i)];
    mean[ch] /= static_cast<double>(n * s);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < s; ++i) {
        const double d = xv[static_cast<size_t>((b * c + ch) * s + i)] - mean[ch];
        var[ch] += d * d;
      }
    var[ch] /= static_cast<double>(n * s);
  }
  return {mean, var};
}

Values naive_batch_norm(const Tensor& x, const Values& mean, const Values& var, const Tensor& weight,
                        const Tensor& bias, double eps) {
  const Values xv = x.to_vector<double>(), wv = weight.to_vector<double>(), bv = bias.to_vector<double>();
  const int64_t c = x.size(1), s = x.numel() / (x.size(0) * c);
  Values out(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) {
    const size_t ch = static_cast<size_t>((static_cast<int64_t>(i) / s) % c);
    out[i] = (xv[i] - mean[ch]) / std::sqrt(var[ch] + eps) * wv[ch] + bv[ch];
  }
  return out;
}

// log_softmax over the last dim of a [rows, cols] tensor.
Values naive_log_softmax(const Tensor& x) {
  const Values xv = x.to_vector<double>();
  const int64_t rows = x.size(0), cols = x.size(1);
  Values out(xv.size());
  for (int64_t r = 0; r < rows; ++r) {
    const auto row = xv.begin() + r * cols;
    const double m = *std::max_element(row, row + cols);
    double sum = 0;
    for (int64_t j = 0; j < cols; ++j) sum += std::exp(row[j] - m);
    for (int64_t j = 0; j < cols; ++j) out[static_cast<size_t>(r * cols + j)] = row[j] - m - std::log(sum);
  }
  return out;
}

// A conv2d configuration: input [N, C, H, W], weight [K, C / groups, kh, kw].
struct ConvCase {
  Shape x, w;
  F::Conv2dParams params;
  bool bias;
};

const std::vector<ConvCase> kConvCases = {
    {{2, 3, 7, 9}, {4, 3, 3, 2}, {.stride = 2, .padding = 1}, true},  // odd sizes, non-square kernel
    {{1, 2, 5, 5}, {3, 2, 3, 3}, {}, false},                          // valid convolution
    {{2, 2, 6, 5}, {2, 2, 3, 3}, {.padding = 1}, true},               // same padding
    {{3, 4, 4, 3}, {5, 4, 1, 1}, {}, true},                           // pointwise (no im2col)
    {{1, 1, 6, 7}, {2, 1, 1, 1}, {.stride = 2}, false},               // strided 1x1, as in a ResNet shortcut
    {{2, 1, 5, 6}, {2, 1, 5, 5}, {.stride = 3, .padding = 2}, true},  // kernel as big as the input, wide stride
    {{2, 4, 7, 9}, {6, 2, 3, 2}, {.stride = {2, 1}, .padding = {1, 0}, .dilation = {1, 2}, .groups = 2}, true},
    {{2, 3, 8, 7}, {3, 1, 3, 3}, {.padding = 2, .dilation = 2, .groups = 3}, false},  // depthwise, dilated
    {{1, 4, 6, 5}, {8, 1, 3, 3}, {.stride = 2, .padding = 1, .groups = 4}, true},     // depthwise, 2 per channel
    {{2, 4, 5, 6}, {6, 2, 1, 1}, {.groups = 2}, false},                               // pointwise in groups
    {{2, 4, 5, 6}, {6, 2, 1, 1}, {.stride = {1, 2}, .groups = 2}, true},              // strided 1x1 in groups
    {{1, 2, 9, 7}, {3, 2, 2, 3}, {.stride = {1, 2}, .padding = {0, 1}, .dilation = {3, 2}}, false},
};

std::string describe(const ConvCase& c) {
  const F::Conv2dParams& p = c.params;
  return detail::concat("x ", shape_str(c.x), " w ", shape_str(c.w), " stride ", p.stride, " padding ", p.padding,
                        " dilation ", p.dilation, " groups ", p.groups);
}

}  // namespace

// ---- conv2d ----

TEST_CASE("conv2d forward matches a naive 7-loop convolution", "[nn]") {
  for (const ConvCase& c : kConvCases) {
    INFO(describe(c));
    Tensor x = uniform(c.x, -1, 1, DType::f32), w = uniform(c.w, -1, 1, DType::f32);
    Tensor b = c.bias ? uniform({c.w[0]}, -1, 1, DType::f32) : Tensor();
    Tensor out = F::conv2d(x, w, b, c.params);
    CHECK(out.size(1) == c.w[0]);
    check_close(out, naive_conv2d(x, w, b, c.params));
  }
}

TEST_CASE("conv2d gradcheck over strides, paddings, dilations, groups and bias", "[nn][gradcheck]") {
  for (const ConvCase& c : kConvCases) {
    INFO(describe(c));
    const F::Conv2dParams params = c.params;
    if (c.bias) {
      check_gradient([params](const Inputs& in) { return F::conv2d(in[0], in[1], in[2], params); },
                     {input(c.x), input(c.w), input({c.w[0]})});
    } else {
      check_gradient([params](const Inputs& in) { return F::conv2d(in[0], in[1], Tensor(), params); },
                     {input(c.x), input(c.w)});
    }
  }
}

TEST_CASE("conv2d takes a non-contiguous input and a weight that needs no gradient", "[nn][gradcheck]") {
  // NHWC storage viewed as NCHW.
  Tensor x = leaf(uniform({2, 5, 6, 3}).permute({0, 3, 1, 2}));
  REQUIRE_FALSE(x.is_contiguous());
  Tensor w = uniform({2, 3, 3, 3});
  check_gradient([w](const Inputs& in) { return F::conv2d(in[0], w, Tensor(), {.stride = 2, .padding = 1}); }, {x});
  Tensor x_copy = x.detach().contiguous();
  check_close(F::conv2d(x, w, Tensor(), {.stride = 2, .padding = 1}),
              naive_conv2d(x_copy, w, Tensor(), {.stride = 2, .padding = 1}), 1e-9);
  // A first layer: the images need no gradient, the weight and bias do.
  Tensor images = uniform({3, 1, 6, 6});
  check_gradient([images](const Inputs& in) { return F::conv2d(images, in[0], in[1], {.padding = 2}); },
                 {input({2, 1, 5, 5}), input({2})});
}

// In f64: each weight's gradient sums 252 products of values in [-1, 1] that cancel to a few
// hundredths, so in f32 the split's rounding alone moves it by up to about 1e-5 absolute.
TEST_CASE("conv2d's weight gradient does not depend on how images are split over threads", "[nn]") {
  Tensor x = uniform({7, 3, 6, 6});
  Tensor grad = uniform({7, 4, 6, 6});
  const int threads = kernels::num_threads();
  std::vector<Values> grads;
  for (int t : {1, 2, 3}) {
    kernels::set_num_threads(t);
    Generator g(7);
    Tensor w = leaf(rand({4, 3, 3, 3}, {.dtype = DType::f64}, &g));
    F::conv2d(x, w, Tensor(), {.padding = 1}).backward(grad);
    grads.push_back(w.grad().to_vector<double>());
  }
  kernels::set_num_threads(threads);
  for (size_t i = 1; i < grads.size(); ++i) {
    for (size_t j = 0; j < grads[0].size(); ++j) CHECK(grads[i][j] == Approx(grads[0][j]).epsilon(1e-12).margin(1e-12));
  }
}

// ---- pooling ----

TEST_CASE("max_pool2d and avg_pool2d forward match naive loops", "[nn]") {
  struct PoolCase {
    Shape x;
    F::Pool2dParams params;
  };
  for (const PoolCase& c : std::vector<PoolCase>{
           {{2, 3, 7, 9}, {.kernel = 2, .stride = 2}},
           {{1, 2, 7, 7}, {.kernel = 3, .stride = 2, .padding = 1}},
           {{2, 1, 5, 6}, {.kernel = 3, .stride = 1, .padding = 1}},
           {{1, 1, 4, 4}, {.kernel = 4, .stride = 0, .padding = 2}},
           {{2, 2, 7, 9}, {.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 0}}},
           {{1, 2, 8, 7}, {.kernel = 3, .stride = 2, .padding = 1, .ceil_mode = true}},  // past the padded edge
           {{1, 1, 5, 7}, {.kernel = 2, .ceil_mode = true}},  // 2x2 windows, a partial one at each odd edge
           {{1, 1, 5, 5}, {.kernel = 3, .stride = 3, .padding = 1, .ceil_mode = true}},  // last window dropped
           {{1, 2, 6, 7}, {.kernel = {2, 3}, .stride = 2, .padding = {0, 1}, .ceil_mode = true}}}) {
    INFO("x " << shape_str(c.x) << " kernel " << c.params.kernel << " stride " << c.params.stride << " padding "
              << c.params.padding << (c.params.ceil_mode ? " ceil_mode" : ""));
    Tensor x = uniform(c.x, -1, 1, DType::f32);
    check_close(F::max_pool2d(x, c.params), naive_pool2d(x, c.params, false), 1e-6);
    for (bool include_pad : {true, false}) {
      INFO("count_include_pad " << include_pad);
      F::Pool2dParams params = c.params;
      params.count_include_pad = include_pad;
      check_close(F::avg_pool2d(x, params), naive_pool2d(x, params, true), 1e-6);
    }
  }
}

TEST_CASE("max_pool2d with dilation and avg_pool2d with divisor_override match naive loops", "[nn]") {
  for (const F::Pool2dParams& p : std::vector<F::Pool2dParams>{
           {.kernel = 3, .stride = 1, .padding = 1, .dilation = 2},
           {.kernel = {2, 3}, .stride = {3, 1}, .padding = {1, 1}, .ceil_mode = true, .dilation = {3, 2}},
           {.kernel = 2, .stride = 2, .dilation = {1, 3}}}) {
    INFO("kernel " << p.kernel << " stride " << p.stride << " padding " << p.padding << " dilation " << p.dilation);
    Tensor x = uniform({2, 3, 9, 10}, -1, 1, DType::f32);
    check_close(F::max_pool2d(x, p), naive_pool2d(x, p, false), 0);
  }
  for (const F::Pool2dParams& p : std::vector<F::Pool2dParams>{
           {.kernel = 2, .divisor_override = 3},  // 2x2 windows: not the 2x2 loops' fixed quarter
           {.kernel = 3,
           .stride = 2,
           .padding = 1,
           .ceil_mode = true,
           .count_include_pad = false,
           .divisor_override = 7},
           {.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 0}, .divisor_override = -2}}) {
    INFO("kernel " << p.kernel << " stride " << p.stride << " divisor_override " << p.divisor_override);
    Tensor x = uniform({2, 3, 8, 7}, -1, 1, DType::f32);
    check_close(F::avg_pool2d(x, p), naive_pool2d(x, p, true), 1e-6);
  }
}

TEST_CASE("max_pool2d routes the gradient to each window's maximum", "[nn]") {
  Tensor x = leaf(from_vector<double>({1, 5, 2, 0, 3, 4, 9, 8, 7, 6, 1, 2, 0, 0, 3, 1}, {1, 1, 4, 4}));
  Tensor out = F::max_pool2d(x, {.kernel = 2});
  CHECK(out.to_vector<double>() == Values{5, 9, 7, 3});
  sum(out).backward();
  CHECK(x.grad().to_vector<double>() == Values{0, 1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1, 0});
  // Overlapping windows that share a maximum add their gradients there.
  Tensor y = leaf(from_vector<double>({0, 0, 0, 0, 9, 0, 0, 0, 0}, {1, 1, 3, 3}));
  sum(F::max_pool2d(y, {.kernel = 2, .stride = 1})).backward();
  CHECK(y.grad().to_vector<double>() == Values{0, 0, 0, 0, 4, 0, 0, 0, 0});
}

TEST_CASE("max_pool2d(x, 2) and avg_pool2d(x, 2): PyTorch's positional form is the options form", "[nn]") {
  struct Case {
    PerAxis kernel, stride, padding;
  };
  for (const Case& c : {Case{2, 0, 0}, Case{3, 2, 1}, Case{{3, 2}, {2, 1}, {1, 0}}}) {
    INFO("kernel " << c.kernel << " stride " << c.stride << " padding " << c.padding);
    const F::Pool2dParams params{.kernel = c.kernel, .stride = c.stride, .padding = c.padding};
    using Pool = Tensor (*)(const Tensor&, F::Pool2dParams);
    using PositionalPool = Tensor (*)(const Tensor&, PerAxis, PerAxis, PerAxis);
    for (auto [with_params, positional] : {std::pair<Pool, PositionalPool>{F::max_pool2d, F::max_pool2d},
                                           std::pair<Pool, PositionalPool>{F::avg_pool2d, F::avg_pool2d}}) {
      Tensor a = uniform({2, 3, 7, 6}, -1, 1, DType::f64), b = a.clone();
      a.requires_grad_();
      b.requires_grad_();
      Tensor out_a = positional(a, c.kernel, c.stride, c.padding), out_b = with_params(b, params);
      CHECK(out_a.sizes() == out_b.sizes());
      CHECK(out_a.to_vector<double>() == out_b.to_vector<double>());
      sum(out_a * out_a).backward();
      sum(out_b * out_b).backward();
      CHECK(a.grad().to_vector<double>() == b.grad().to_vector<double>());
    }
  }
  // The calls as a user writes them: the stride defaults to the kernel, as in PyTorch.
  Tensor x = uniform({1, 2, 4, 6}, -1, 1, DType::f32);
  CHECK(F::max_pool2d(x, 2).to_vector<float>() == F::max_pool2d(x, {.kernel = 2}).to_vector<float>());
  CHECK(F::avg_pool2d(x, 2).sizes() == Shape{1, 2, 2, 3});
  CHECK(F::avg_pool2d(x, 2, 1).to_vector<float>() == F::avg_pool2d(x, {.kernel = 2, .stride = 1}).to_vector<float>());
}

TEST_CASE("pooling gradcheck", "[nn][gradcheck]") {
  check_gradient([](const Inputs& in) { return F::max_pool2d(in[0], {.kernel = 2}); }, {distinct({2, 2, 5, 7})});
  check_gradient([](const Inputs& in) { return F::max_pool2d(in[0], {.kernel = 3, .stride = 2, .padding = 1}); },
                 {distinct({1, 2, 7, 6})});
  check_gradient([](const Inputs& in) { return F::avg_pool2d(in[0], {.kernel = 2}); }, {input({2, 2, 5, 7})});
  check_gradient([](const Inputs& in) { return F::avg_pool2d(in[0], {.kernel = 2}); }, {input({2, 2, 4, 6})});
  check_gradient([](const Inputs& in) { return F::avg_pool2d(in[0], {.kernel = 3, .stride = 2, .padding = 1}); },
                 {input({1, 2, 7, 6})});
  check_gradient([](const Inputs& in) { return F::avg_pool2d(in[0], {.kernel = 2, .stride = 1, .padding = 1}); },
                 {leaf(uniform({1, 5, 4, 2}).permute({0, 3, 1, 2}))});  // non-contiguous
}

TEST_CASE("pooling gradcheck with dilation and divisor_override", "[nn][gradcheck]") {
  const F::Pool2dParams dilated{.kernel = 3, .stride = 1, .padding = 1, .dilation = 2};
  const F::Pool2dParams dilated_ceil{
      .kernel = {2, 3}, .stride = 2, .padding = 1, .ceil_mode = true, .dilation = {3, 2}};
  for (const F::Pool2dParams& p : {dilated, dilated_ceil}) {
    INFO("dilation " << p.dilation);
    check_gradient([p](const Inputs& in) { return F::max_pool2d(in[0], p); }, {distinct({2, 2, 7, 9})});
  }
  const F::Pool2dParams divided{.kernel = 3, .stride = 2, .padding = 1, .ceil_mode = true, .divisor_override = 4};
  const F::Pool2dParams divided_2x2{.kernel = 2, .divisor_override = 3};
  for (const F::Pool2dParams& p : {divided, divided_2x2}) {
    INFO("divisor_override " << p.divisor_override);
    check_gradient([p](const Inputs& in) { return F::avg_pool2d(in[0], p); }, {input({2, 2, 7, 9})});
  }
}

TEST_CASE("pooling gradcheck with per-axis windows, ceil_mode and count_include_pad", "[nn][gradcheck]") {
  const F::Pool2dParams rect{.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 0}};
  const F::Pool2dParams ceil{.kernel = 3, .stride = 2, .padding = 1, .ceil_mode = true};
  const F::Pool2dParams ceil_2x2{.kernel = 2, .ceil_mode = true};
  for (const F::Pool2dParams& p : {rect, ceil, ceil_2x2}) {
    INFO("kernel " << p.kernel << " stride " << p.stride << " padding " << p.padding << " ceil " << p.ceil_mode);
    check_gradient([p](const Inputs& in) { return F::max_pool2d(in[0], p); }, {distinct({2, 2, 7, 9})});
    for (bool include_pad : {true, false}) {
      F::Pool2dParams avg = p;
      avg.count_include_pad = include_pad;
      check_gradient([avg](const Inputs& in) { return F::avg_pool2d(in[0], avg); }, {input({2, 2, 7, 9})});
    }
  }
}

// The activations an average pooling can fuse, with their ops as separate modules run them.
const std::vector<std::pair<kernels::UnaryOp, Tensor (*)(const Tensor&)>> kFusable = {
    {kernels::UnaryOp::relu, relu}, {kernels::UnaryOp::sigmoid, sigmoid}, {kernels::UnaryOp::tanh, tanh}};

TEST_CASE("activated_avg_pool2d equals the activation then avg_pool2d, value and gradient", "[nn][gradcheck]") {
  // LeNet's 2x2 (its own loop, odd edges dropped), overlapping windows, padding, ceil_mode.
  const std::vector<std::pair<Shape, F::Pool2dParams>> cases = {
      {{2, 3, 6, 8}, {.kernel = 2}},
      {{1, 2, 5, 7}, {.kernel = 2}},
      {{2, 2, 7, 9}, {.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 0}}},
      {{1, 3, 7, 6}, {.kernel = 2, .stride = 1, .padding = 1}},
      {{2, 2, 8, 7}, {.kernel = 3, .stride = 2, .padding = 1, .ceil_mode = true, .count_include_pad = false}}};
  for (const auto& [op, activation] : kFusable) {
    for (size_t c = 0; c < cases.size(); ++c) {
      const auto& [shape, params] = cases[c];
      INFO(kernels::name(op) << " case " << c);
      // f32, as training runs: relu's fused pass adds the same terms in the same order, so its bits
      // match; sigmoid and tanh may round their activation differently than the vectorised op.
      const double tolerance = op == kernels::UnaryOp::relu ? 0.0 : 1e-6;
      Tensor x = leaf(uniform(shape, -2, 2, DType::f32)), x_ref = leaf(x.detach().clone());
      Tensor grad = uniform(F::avg_pool2d(x.detach(), params).sizes(), -1, 1, DType::f32);
      Tensor fused = F::activated_avg_pool2d(x, op, params);
      Tensor separate = F::avg_pool2d(activation(x_ref), params);
      check_close(fused, separate.to_vector<double>(), tolerance);
      sum(fused * grad).backward();
      sum(separate * grad).backward();
      check_close(x.grad(), x_ref.grad().to_vector<double>(), tolerance);
      // f64 gradcheck of the fused op alone.
      check_gradient([op, params](const Inputs& in) { return F::activated_avg_pool2d(in[0], op, params); },
                     {input(shape)});
    }
  }
  // No activation is plain average pooling.
  Tensor x = uniform({1, 2, 4, 6});
  check_close(F::activated_avg_pool2d(x, std::nullopt, {.kernel = 2}),
              F::avg_pool2d(x, {.kernel = 2}).to_vector<double>(), 0);
}

TEST_CASE("adaptive_avg_pool2d averages (possibly overlapping) regions", "[nn]") {
  Tensor x = uniform({2, 3, 7, 5}, -1, 1, DType::f32);
  Tensor global = F::adaptive_avg_pool2d(x, 1);
  CHECK(global.sizes() == Shape{2, 3, 1, 1});
  check_close(global, mean(x, {2, 3}, true).to_vector<double>(), 1e-6);
  for (const PerAxis size : {PerAxis(3), PerAxis(9), PerAxis(3, 4), PerAxis(8, 2)}) {  // not multiples, growing
    INFO("output size " << size);
    Tensor out = F::adaptive_avg_pool2d(x, size);
    CHECK(out.sizes() == Shape{2, 3, size.h, size.w});
    check_close(out, naive_adaptive_pool2d(x, size, true), 1e-6);
  }
  check_gradient([](const Inputs& in) { return F::adaptive_avg_pool2d(in[0], 1); }, {input({2, 2, 3, 4})});
  check_gradient([](const Inputs& in) { return F::adaptive_avg_pool2d(in[0], 3); }, {input({1, 2, 7, 5})});
  check_gradient([](const Inputs& in) { return F::adaptive_avg_pool2d(in[0], {2, 7}); }, {input({1, 2, 7, 5})});
}

TEST_CASE("adaptive_max_pool2d takes each region's maximum and routes the gradient to it", "[nn]") {
  Tensor x = uniform({2, 3, 7, 5}, -1, 1, DType::f32);
  for (const PerAxis size : {PerAxis(1), PerAxis(3, 4), PerAxis(8, 2), PerAxis(7, 5)}) {
    INFO("output size " << size);
    Tensor out = F::adaptive_max_pool2d(x, size);
    CHECK(out.sizes() == Shape{2, 3, size.h, size.w});
    check_close(out, naive_adaptive_pool2d(x, size, false), 0);
  }
  // Overlapping regions that share a maximum add their gradients there.
  Tensor y = leaf(from_vector<double>({0, 1, 0, 2, 9, 3, 0, 4, 0}, {1, 1, 3, 3}));
  sum(F::adaptive_max_pool2d(y, 2)).backward();  // regions [0, 2) x [0, 2), [0, 2) x [1, 3), ...
  CHECK(y.grad().to_vector<double>() == Values{0, 0, 0, 0, 4, 0, 0, 0, 0});
  check_gradient([](const Inputs& in) { return F::adaptive_max_pool2d(in[0], {3, 4}); }, {distinct({2, 2, 7, 5})});
  check_gradient([](const Inputs& in) { return F::adaptive_max_pool2d(in[0], {5, 2}); }, {distinct({1, 2, 3, 7})});
}

// ---- batch_norm ----

TEST_CASE("batch_norm in training normalises with batch statistics and updates the running ones", "[nn]") {
  for (Shape shape : {Shape{4, 3, 5, 3}, Shape{6, 3}}) {
    INFO("x " << shape_str(shape));
    Tensor x = uniform(shape, -2, 3, DType::f32);
    Tensor w = uniform({3}, 0.5, 1.5, DType::f32), b = uniform({3}, -1, 1, DType::f32);
    Tensor running_mean = from_vector<float>({0.5f, -1.0f, 2.0f});
    Tensor running_var = from_vector<float>({1.0f, 2.0f, 0.5f});
    const uint64_t version = running_mean.version();
    Tensor out = F::batch_norm(x, w, b, running_mean, running_var, /*training=*/true, /*momentum=*/0.2, 1e-5);
    auto [mean_v, var_v] = channel_stats(x);
    check_close(out, naive_batch_norm(x, mean_v, var_v, w, b, 1e-5));
    const double count = static_cast<double>(x.numel() / 3);
    const Values old_mean{0.5, -1, 2}, old_var{1, 2, 0.5};
    Values want_mean, want_var;
    for (size_t c = 0; c < 3; ++c) {
      want_mean.push_back(0.8 * old_mean[c] + 0.2 * mean_v[c]);
      want_var.push_back(0.8 * old_var[c] + 0.2 * var_v[c] * count / (count - 1));  // unbiased
    }
    check_close(running_mean, want_mean, 1e-5);
    check_close(running_var, want_var, 1e-5);
    CHECK(running_mean.version() > version);
  }
}

TEST_CASE("batch_norm in eval mode uses the running statistics", "[nn]") {
  Tensor x = uniform({3, 2, 3, 4}, -1, 1, DType::f32);
  Tensor w = uniform({2}, 0.5, 1.5, DType::f32), b = uniform({2}, -1, 1, DType::f32);
  Tensor running_mean = from_vector<float>({0.25f, -0.5f}), running_var = from_vector<float>({0.5f, 2.0f});
  Tensor out = F::batch_norm(x, w, b, running_mean, running_var, /*training=*/false);
  check_close(out, naive_batch_norm(x, {0.25, -0.5}, {0.5, 2.0}, w, b, 1e-5));
  check_close(running_mean, {0.25, -0.5}, 0);  // untouched
}

TEST_CASE("batch_norm gradcheck in training and eval", "[nn][gradcheck]") {
  for (bool training : {true, false}) {
    INFO("training " << training);
    Tensor running_mean = uniform({3}), running_var = uniform({3}, 0.5, 2);
    auto fn = [&](const Inputs& in) { return F::batch_norm(in[0], in[1], in[2], running_mean, running_var, training); };
    check_gradient(fn, {input({3, 3, 2, 3}), input({3}, 0.5, 1.5), input({3})});
    check_gradient(fn, {input({5, 3}), input({3}, 0.5, 1.5), input({3})});
    check_gradient(fn, {leaf(uniform({2, 3, 4, 3}).permute({0, 3, 1, 2})), input({3}), input({3})});
    // Without affine parameters (and, in training, without running statistics).
    check_gradient(
        [training, running_mean, running_var](const Inputs& in) {
          return training ? F::batch_norm(in[0], Tensor(), Tensor(), Tensor(), Tensor(), true)
                          : F::batch_norm(in[0], Tensor(), Tensor(), running_mean, running_var, false);
        },
        {input({4, 3, 2, 2})});
  }
}

// ---- softmax, log_softmax ----

TEST_CASE("softmax and log_softmax match naive loops and never overflow", "[nn]") {
  Tensor x = uniform({5, 7}, -3, 3, DType::f32);
  const Values want = naive_log_softmax(x);
  check_close(F::log_softmax(x, -1), want, 1e-5);
  Values want_softmax;
  for (double v : want) want_softmax.push_back(std::exp(v));
  check_close(F::softmax(x, 1), want_softmax, 1e-6);
  // Over a middle dim: the same as moving that dim last.
  Tensor y = uniform({2, 4, 3}, -3, 3, DType::f32);
  Tensor moved = y.transpose(1, 2).contiguous().reshape({6, 4});
  check_close(F::log_softmax(y, 1).transpose(1, 2).contiguous(), naive_log_softmax(moved), 1e-5);
  // exp(1000) overflows; the max shift keeps the result finite.
  Tensor big = from_vector<float>({1000, 1001, 1002}, {1, 3});
  check_close(F::softmax(big, -1), {0.0900306, 0.2447285, 0.6652410}, 1e-6);
  check_close(F::log_softmax(big, -1), {-2.4076059, -1.4076059, -0.4076059}, 1e-5);
}

TEST_CASE("softmax and log_softmax gradcheck", "[nn][gradcheck]") {
  for (int64_t dim : {-1, 0, 1}) {
    INFO("dim " << dim);
    check_gradient([dim](const Inputs& in) { return F::softmax(in[0], dim); }, {input({3, 4, 2})});
    check_gradient([dim](const Inputs& in) { return F::log_softmax(in[0], dim); }, {input({3, 4, 2})});
  }
  check_gradient([](const Inputs& in) { return F::log_softmax(in[0], 1); }, {leaf(uniform({5, 3}).t())});
  check_gradient([](const Inputs& in) { return F::softmax(in[0], 0); }, {input({6})});
}

// ---- cross_entropy, mse_loss ----

TEST_CASE("cross_entropy matches -log_softmax at the target", "[nn]") {
  Tensor logits = uniform({5, 7}, -3, 3, DType::f32);
  Tensor target = from_vector<int64_t>({0, 6, 3, 3, 1});
  const Values log_probs = naive_log_softmax(logits);
  Values want;
  for (int64_t i = 0; i < 5; ++i)
    want.push_back(-log_probs[static_cast<size_t>(i * 7 + target.to_vector<int64_t>()[i])]);
  check_close(F::cross_entropy(logits, target, F::Reduction::none), want, 1e-5);
  const double total = std::accumulate(want.begin(), want.end(), 0.0);
  check_close(F::cross_entropy(logits, target, F::Reduction::sum), {total}, 1e-5);
  check_close(F::cross_entropy(logits, target), {total / 5}, 1e-5);
  // Large logits stay finite.
  Tensor big = from_vector<float>({1000, 0, -1000, 500}, {2, 2});
  check_close(F::cross_entropy(big, from_vector<int64_t>({1, 0}), F::Reduction::none), {1000, 1500}, 1e-3);
}

TEST_CASE("cross_entropy and log_softmax in f32, their exps taken for many rows at once, equal f64's", "[nn]") {
  // [1000, 10]: groups of 409 rows; [3, 5000]: rows longer than a group (softmax_rows.h).
  for (const Shape& shape : {Shape{1000, 10}, Shape{3, 5000}}) {
    INFO("logits " << shape[0] << " x " << shape[1]);
    const Tensor logits64 = uniform(shape, -8, 8, DType::f64);
    std::vector<int64_t> classes;
    for (int64_t i = 0; i < shape[0]; ++i) classes.push_back((7 * i) % shape[1]);
    const Tensor target = from_vector(classes);
    Tensor logits32 = logits64.to(DType::f32).requires_grad_();
    Tensor reference = logits64.to(DType::f32).to(DType::f64).requires_grad_();
    const Tensor loss32 = F::cross_entropy(logits32, target, F::Reduction::none);
    const Tensor loss64 = F::cross_entropy(reference, target, F::Reduction::none);
    check_close(loss32, loss64.to_vector<double>(), 1e-5);
    check_close(F::log_softmax(logits32, 1), F::log_softmax(reference, 1).to_vector<double>(), 1e-5);
    sum(loss32).backward();
    sum(loss64).backward();
    check_close(logits32.grad(), reference.grad().to_vector<double>(), 1e-6);
  }
}

TEST_CASE("cross_entropy and mse_loss gradcheck", "[nn][gradcheck]") {
  Tensor target = from_vector<int64_t>({2, 0, 3, 3});
  for (F::Reduction r : {F::Reduction::mean, F::Reduction::sum, F::Reduction::none}) {
    INFO("reduction " << static_cast<int>(r));
    check_gradient([&](const Inputs& in) { return F::cross_entropy(in[0], target, r); }, {input({4, 5}, -2, 2)});
    check_gradient([&](const Inputs& in) { return F::cross_entropy(in[0], target, r); }, {leaf(uniform({5, 4}).t())});
    check_gradient([&](const Inputs& in) { return F::mse_loss(in[0], in[1], r); }, {input({3, 4}), input({3, 4})});
  }
}

TEST_CASE("cross_entropy with ignore_index, weight, label_smoothing and [N, C, d] logits: gradcheck",
          "[nn][gradcheck]") {
  const Tensor weight = from_vector<double>({0.5, 2.0, 1.25, 0.75, 1.5});
  const Tensor target = from_vector<int64_t>({2, -100, 3, 0});
  const Tensor spatial_target = from_vector<int64_t>({0, 4, 1, 1, 3, 2}, {2, 3});
  for (F::Reduction r : {F::Reduction::mean, F::Reduction::sum, F::Reduction::none}) {
    for (double smoothing : {0.0, 0.25}) {
      for (bool weighted : {false, true}) {
        INFO("reduction " << static_cast<int>(r) << ", label_smoothing " << smoothing << ", weighted " << weighted);
        F::CrossEntropyOptions options;
        options.reduction = r;
        options.label_smoothing = smoothing;
        if (weighted) options.weight = weight;
        check_gradient([&](const Inputs& in) { return F::cross_entropy(in[0], target, options); },
                       {input({4, 5}, -2, 2)});
        // [N, C, d] logits, with a class as ignore_index
        options.ignore_index = 1;
        check_gradient([&](const Inputs& in) { return F::cross_entropy(in[0], spatial_target, options); },
                       {input({2, 5, 3}, -2, 2)});
      }
    }
  }
}

TEST_CASE("mse_loss is the mean squared difference", "[nn]") {
  Tensor a = from_vector<float>({1, 2, 3, 4}, {2, 2}), b = from_vector<float>({0, 2, 5, 1}, {2, 2});
  check_close(F::mse_loss(a, b), {(1.0 + 0 + 4 + 9) / 4}, 1e-6);
  check_close(F::mse_loss(a, b, F::Reduction::sum), {14}, 1e-6);
  check_close(F::mse_loss(a, b, F::Reduction::none), {1, 0, 4, 9}, 1e-6);
}

// ---- linear, dropout ----

TEST_CASE("linear is x @ weight^T + bias", "[nn]") {
  Tensor x = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor w = from_vector<float>({1, 0, -1, 2, 1, 0}, {2, 3});
  Tensor b = from_vector<float>({0.5f, -1});
  check_close(F::linear(x, w, b), {-1.5, 3, -1.5, 12}, 1e-6);
  check_close(F::linear(x, w), {-2, 4, -2, 13}, 1e-6);
  CHECK(F::linear(uniform({2, 4, 3}, -1, 1, DType::f32), w, b).sizes() == Shape{2, 4, 2});
}

TEST_CASE("linear gradcheck", "[nn][gradcheck]") {
  check_gradient([](const Inputs& in) { return F::linear(in[0], in[1], in[2]); },
                 {input({4, 3}), input({2, 3}), input({2})});
  check_gradient([](const Inputs& in) { return F::linear(in[0], in[1]); }, {input({2, 2, 3}), input({5, 3})});
  check_gradient([](const Inputs& in) { return F::linear(in[0], in[1], in[2]); },
                 {leaf(uniform({3, 4}).t()), input({2, 3}), input({2})});
}

TEST_CASE("dropout zeroes with probability p and scales the rest by 1/(1-p)", "[nn]") {
  Tensor x = ones({200, 100});
  Generator g(3);
  Values v = F::dropout(x, 0.3, true, &g).to_vector<double>();
  const auto zeros_count = std::count(v.begin(), v.end(), 0.0);
  CHECK(static_cast<double>(zeros_count) / static_cast<double>(v.size()) == Approx(0.3).margin(0.02));
  for (double e : v) CHECK((e == 0.0 || e == Approx(1 / 0.7)));
  // The same seed gives the same mask.
  Generator g1(11), g2(11);
  CHECK(F::dropout(x, 0.5, true, &g1).to_vector<double>() == F::dropout(x, 0.5, true, &g2).to_vector<double>());
  // Identity when not training or when p is 0; all zeros when p is 1.
  CHECK(F::dropout(x, 0.5, false).is_same(x));
  CHECK(F::dropout(x, 0.0, true).is_same(x));
  Values all_dropped = F::dropout(x, 1.0, true).to_vector<double>();
  CHECK(std::all_of(all_dropped.begin(), all_dropped.end(), [](double e) { return e == 0.0; }));
  REQUIRE_THROWS_WITH(F::dropout(x, 1.5, true), Contains("dropout: probability p must be in [0, 1], got 1.5"));
}

TEST_CASE("dropout gradcheck with a fixed mask", "[nn][gradcheck]") {
  // A freshly seeded generator per call: every evaluation draws the same mask.
  check_gradient(
      [](const Inputs& in) {
        Generator g(42);
        return F::dropout(in[0], 0.4, true, &g);
      },
      {input({6, 5})});
}

// ---- errors ----

TEST_CASE("nn ops name the op, the shapes and what clashed", "[nn][op_errors]") {
  Tensor x = zeros({8, 3, 28, 28});
  REQUIRE_THROWS_WITH(F::conv2d(x, zeros({6, 1, 5, 5})),
                      Contains("conv2d: input f32[8, 3, 28, 28] on cpu:0 has 3 channels but weight "
                               "f32[6, 1, 5, 5] on cpu:0 expects 1"));
  REQUIRE_THROWS_WITH(F::conv2d(zeros({3, 28, 28}), zeros({6, 3, 5, 5})),
                      Contains("conv2d: expected input of rank 4 ([N, C, H, W]), got f32[3, 28, 28]"));
  REQUIRE_THROWS_WITH(F::conv2d(x, zeros({6, 3, 5, 5}), zeros({5})),
                      Contains("conv2d: bias f32[5] on cpu:0 does not match the 6 output channels"));
  REQUIRE_THROWS_WITH(F::conv2d(zeros({1, 3, 4, 4}), zeros({6, 3, 5, 5})),
                      Contains("conv2d: kernel 5x5 is larger than input f32[1, 3, 4, 4]"));
  REQUIRE_THROWS_WITH(F::conv2d(x, zeros({6, 3, 5, 5}, {.device = cpu(1)})),
                      Contains("conv2d: tensors on different devices"));
  REQUIRE_THROWS_WITH(F::conv2d(x, zeros({6, 3, 5, 5}, {.dtype = DType::f64})),
                      Contains("conv2d: tensors of different dtypes"));
  REQUIRE_THROWS_WITH(F::conv2d(x, zeros({6, 3, 5, 5}), Tensor(), {.stride = 0}),
                      Contains("conv2d: expected stride >= 1"));
  REQUIRE_THROWS_WITH(F::conv2d(x, zeros({6, 3, 5, 5}), Tensor(), {.dilation = {1, 0}}),
                      Contains("conv2d: expected stride >= 1, padding >= 0 and dilation >= 1, got stride 1, "
                               "padding 0 and dilation (1, 0)"));
  REQUIRE_THROWS_WITH(F::conv2d(zeros({1, 6, 5, 5}), zeros({4, 2, 3, 3}), Tensor(), {.groups = 4}),
                      Contains("conv2d: in_channels 6 is not divisible by groups 4"));
  REQUIRE_THROWS_WITH(F::conv2d(zeros({1, 4, 5, 5}), zeros({6, 1, 3, 3}), Tensor(), {.groups = 4}),
                      Contains("conv2d: out_channels 6 is not divisible by groups 4"));
  REQUIRE_THROWS_WITH(F::conv2d(zeros({1, 4, 5, 5}), zeros({4, 2, 3, 3}), Tensor(), {.groups = 4}),
                      Contains("conv2d: input f32[1, 4, 5, 5] on cpu:0 has 4 channels but weight f32[4, 2, 3, 3] on "
                               "cpu:0 with groups 4 expects 8 (2 per group)"));
  REQUIRE_THROWS_WITH(F::conv2d(zeros({1, 3, 4, 4}), zeros({6, 3, 3, 3}), Tensor(), {.dilation = 2}),
                      Contains("conv2d: kernel 3x3 with dilation 2 (spanning 5x5) is larger than input f32[1, 3, 4, 4] "
                               "on cpu:0 with padding 0"));

  REQUIRE_THROWS_WITH(F::max_pool2d(zeros({2, 4, 4}), {.kernel = 2}), Contains("max_pool2d: expected input of rank 4"));
  REQUIRE_THROWS_WITH(F::avg_pool2d(x, {.kernel = 2, .padding = 2}),
                      Contains("avg_pool2d: padding 2 must be between 0 and half the kernel size 2"));
  REQUIRE_THROWS_WITH(F::avg_pool2d(x, {.kernel = {3, 2}, .padding = {1, 2}}),
                      Contains("avg_pool2d: padding (1, 2) must be between 0 and half the kernel size (3, 2)"));
  REQUIRE_THROWS_WITH(F::max_pool2d(x, {.kernel = 2, .count_include_pad = false}),
                      Contains("max_pool2d: count_include_pad applies to avg_pool2d only"));
  REQUIRE_THROWS_WITH(F::max_pool2d(zeros({1, 1, 2, 2}), {.kernel = 3}),
                      Contains("max_pool2d: kernel 3 with padding 0 is larger than input f32[1, 1, 2, 2]"));
  REQUIRE_THROWS_WITH(F::max_pool2d(zeros({1, 1, 4, 4}), {.kernel = 2, .dilation = 4}),
                      Contains("max_pool2d: kernel 2 with padding 0 and dilation 4 is larger than input"));
  REQUIRE_THROWS_WITH(F::max_pool2d(x, {.kernel = 2, .dilation = {1, 0}}),
                      Contains("max_pool2d: expected dilation >= 1, got (1, 0)"));
  // Taps at rows -1 and 1 of a one-row input: PyTorch would read outside the plane.
  REQUIRE_THROWS_WITH(F::max_pool2d(zeros({1, 1, 1, 4}), {.kernel = 2, .padding = 1, .dilation = 2}),
                      Contains("max_pool2d: with kernel 2, padding 1 and dilation 2 a window of input f32[1, 1, 1, 4] "
                               "on cpu:0 has all its taps in the padding"));
  REQUIRE_THROWS_WITH(F::avg_pool2d(x, {.kernel = 2, .dilation = 2}),
                      Contains("avg_pool2d: dilation applies to max_pool2d only, got 2"));
  REQUIRE_THROWS_WITH(F::max_pool2d(x, {.kernel = 2, .divisor_override = 3}),
                      Contains("max_pool2d: divisor_override applies to avg_pool2d only"));
  REQUIRE_THROWS_WITH(F::adaptive_avg_pool2d(x, 0), Contains("adaptive_avg_pool2d: expected output_size >= 1"));
  REQUIRE_THROWS_WITH(F::adaptive_max_pool2d(x, {2, 0}),
                      Contains("adaptive_max_pool2d: expected output_size >= 1, got (2, 0)"));
  REQUIRE_THROWS_WITH(F::adaptive_max_pool2d(zeros({1, 1, 0, 3}), 1),
                      Contains("adaptive_max_pool2d: input f32[1, 1, 0, 3] on cpu:0 has empty planes"));

  REQUIRE_THROWS_WITH(F::batch_norm(x, zeros({4}), zeros({3}), zeros({3}), ones({3}), true),
                      Contains("batch_norm: weight f32[4] on cpu:0 does not match the 3 channels of input "
                               "f32[8, 3, 28, 28]"));
  REQUIRE_THROWS_WITH(F::batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), false),
                      Contains("batch_norm: running_mean and running_var are required when not training"));
  REQUIRE_THROWS_WITH(F::batch_norm(zeros({1, 3}), Tensor(), Tensor(), Tensor(), Tensor(), true),
                      Contains("batch_norm: expected more than 1 value per channel when training"));

  REQUIRE_THROWS_WITH(F::linear(zeros({8, 400}), zeros({120, 399})),
                      Contains("linear: input f32[8, 400] on cpu:0 has 400 features but weight f32[120, 399] on "
                               "cpu:0 expects 399"));
  REQUIRE_THROWS_WITH(F::linear(zeros({8, 4}), zeros({3, 4}), zeros({4})),
                      Contains("linear: bias f32[4] on cpu:0 does not match the 3 outputs"));
  REQUIRE_THROWS_WITH(F::mse_loss(zeros({4, 3}), zeros({4})),
                      Contains("mse_loss: input f32[4, 3]") && Contains("differ in shape"));
  REQUIRE_THROWS_WITH(F::softmax(zeros({2, 3}), 2), Contains("softmax"));
}

TEST_CASE("cross_entropy names a bad target's value and index", "[nn][op_errors]") {
  Tensor logits = zeros({4, 10});
  REQUIRE_THROWS_WITH(F::cross_entropy(logits, from_vector<int64_t>({1, 2, 10, 3})),
                      Contains("cross_entropy") && Contains("target[2] = 10 is out of range for 10 classes"));
  REQUIRE_THROWS_WITH(F::cross_entropy(logits, from_vector<int64_t>({1, -1, 0, 3})),
                      Contains("target[1] = -1 is out of range"));
  REQUIRE_THROWS_WITH(F::cross_entropy(logits, from_vector<float>({1, 2, 3, 4})),
                      Contains("cross_entropy: expected target of dtype i64 (class indices), got f32[4]"));
  REQUIRE_THROWS_WITH(F::cross_entropy(logits, from_vector<int64_t>({1, 2, 3})),
                      Contains("cross_entropy: target i64[3] on cpu:0 does not match logits f32[4, 10] on cpu:0: "
                               "expected shape [4]"));
  REQUIRE_THROWS_WITH(F::cross_entropy(zeros({4}), from_vector<int64_t>({1, 2, 3, 0})),
                      Contains("cross_entropy: target i64[4] on cpu:0 does not match logits f32[4] on cpu:0: "
                               "expected shape []"));
  REQUIRE_THROWS_WITH(F::cross_entropy(zeros({}), zeros({}, {.dtype = DType::i64})),
                      Contains("cross_entropy: expected logits of shape [N, C], [N, C, d1, ...] or [C], got f32[]"));
  REQUIRE_THROWS_WITH(F::cross_entropy(zeros({4, 3, 2}), zeros({4, 3}, {.dtype = DType::i64})),
                      Contains("expected shape [4, 2]"));
  F::CrossEntropyOptions options;
  options.weight = ones({4});
  REQUIRE_THROWS_WITH(F::cross_entropy(logits, from_vector<int64_t>({1, 2, 3, 0}), options),
                      Contains("cross_entropy: weight f32[4] on cpu:0 does not match the 10 classes of logits "
                               "f32[4, 10] on cpu:0 (expected shape [10])"));
  options.weight = ones({10}, {.dtype = DType::f64});
  REQUIRE_THROWS_WITH(F::cross_entropy(logits, from_vector<int64_t>({1, 2, 3, 0}), options), Contains("dtype"));
  options.weight = ones({10});
  options.weight.requires_grad_();
  REQUIRE_THROWS_WITH(F::cross_entropy(logits, from_vector<int64_t>({1, 2, 3, 0}), options),
                      Contains("cross_entropy gives the class weights no gradient (as PyTorch); pass weight.detach()"));
  options.weight = Tensor();
  options.label_smoothing = -0.1;
  REQUIRE_THROWS_WITH(F::cross_entropy(logits, from_vector<int64_t>({1, 2, 3, 0}), options),
                      Contains("cross_entropy: label_smoothing must be in [0, 1], got -0.1"));
  // A target equal to ignore_index is no error, wherever ignore_index lies.
  options.label_smoothing = 0;
  options.ignore_index = -1;
  CHECK(F::cross_entropy(logits, from_vector<int64_t>({1, -1, 0, 3}), options).item<float>() == Approx(std::log(10.0)));
}

TEST_CASE("NN kernels on a device without a kernel table say so", "[nn]") {
  if (cuda::is_built()) {
    SUCCEED("this build registers the CUDA kernel table");
    return;
  }
  REQUIRE_THROWS_WITH(kernels::backend_for(cuda_device(0), "conv2d_forward"),
                      Contains("conv2d_forward on cuda:0: duet was built without CUDA"));
}

TEST_CASE("nn ops record named backward nodes", "[nn]") {
  Tensor x = input({2, 2, 4, 4});
  CHECK(F::conv2d(x, input({3, 2, 3, 3})).grad_fn()->name() == "Conv2dBackward");
  CHECK(F::max_pool2d(x, {.kernel = 2}).grad_fn()->name() == "MaxPool2dBackward");
  CHECK(F::avg_pool2d(x, {.kernel = 2}).grad_fn()->name() == "AvgPool2dBackward");
  CHECK(F::adaptive_avg_pool2d(x, 1).grad_fn()->name() == "AdaptiveAvgPool2dBackward");
  CHECK(F::adaptive_max_pool2d(x, 1).grad_fn()->name() == "AdaptiveMaxPool2dBackward");
  CHECK(F::batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), true).grad_fn()->name() == "BatchNormBackward");
  CHECK(F::softmax(x, 1).grad_fn()->name() == "SoftmaxBackward");
  CHECK(F::log_softmax(x, 1).grad_fn()->name() == "LogSoftmaxBackward");
  Tensor logits = input({2, 3});
  CHECK(F::cross_entropy(logits, from_vector<int64_t>({0, 2}), F::Reduction::none).grad_fn()->name() ==
        "CrossEntropyBackward");
  // Nothing is recorded when no input requires grad.
  CHECK(F::conv2d(uniform({1, 1, 3, 3}), uniform({1, 1, 2, 2})).grad_fn() == nullptr);
}
