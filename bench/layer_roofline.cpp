// The roofline per layer: each weighted layer of mlp, lenet and lenet-relu, forward, input
// gradient and weight gradient, timed alone on a batch of 256 in f32 on duet's CPU kernels and
// reported as GFLOP/s (2 * M * N * K FLOPs per GEMM, as docs/performance.md counts them).
// Convolutions are timed on both paths: the kernel conv2d.cpp picks, and im2col + GEMM
// (DUET_CONV_IM2COL=1). Medians of --runs timings; one Markdown table on stdout.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "duet/duet.h"
#include "duet/kernels/kernels.h"
#include "duet/kernels/nn_kernels.h"

using namespace duet;

namespace {

struct Layer {
  std::string model, name;
  int64_t in, out;       // channels (conv) or features (linear)
  int64_t size, kernel;  // input height = width, kernel height = width; 0 for a Linear layer
  int64_t padding;
  bool first;  // nobody needs the first layer's input gradient
};

const std::vector<Layer> kLayers = {
    {"mlp", "784->256", 784, 256, 0, 0, 0, true},
    {"mlp", "256->10", 256, 10, 0, 0, 0, false},
    {"lenet", "conv 1->6 5x5 p2", 1, 6, 28, 5, 2, true},
    {"lenet", "conv 6->16 5x5", 6, 16, 14, 5, 0, false},
    {"lenet", "400->120", 400, 120, 0, 0, 0, false},
    {"lenet-relu", "conv 1->20 3x3", 1, 20, 28, 3, 0, true},
    {"lenet-relu", "conv 20->50 5x5", 20, 50, 13, 5, 0, false},
    {"lenet-relu", "800->128", 800, 128, 0, 0, 0, false},
    // resnet18's stride-1 3x3 convolutions, per stage (its stride-2 ones stay on im2col)
    {"resnet18", "conv 64->64 3x3 p1", 64, 64, 28, 3, 1, false},
    {"resnet18", "conv 128->128 3x3 p1", 128, 128, 14, 3, 1, false},
    {"resnet18", "conv 256->256 3x3 p1", 256, 256, 7, 3, 1, false},
    {"resnet18", "conv 512->512 3x3 p1", 512, 512, 4, 3, 1, false},
};

double median_ms(int runs, const std::function<void()>& fn) {
  fn();  // warm-up: first allocations, caches
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// Times fn on conv2d.cpp's own choice, then with im2col forced.
std::pair<double, double> both_paths(int runs, const std::function<void()>& fn) {
  unsetenv("DUET_CONV_IM2COL");
  const double chosen = median_ms(runs, fn);
  setenv("DUET_CONV_IM2COL", "1", 1);
  const double im2col = median_ms(runs, fn);
  unsetenv("DUET_CONV_IM2COL");
  return {chosen, im2col};
}

void row(const Layer& l, const char* op, double mflop, double ms, double im2col_ms) {
  std::printf("| %s | %s | %s | %.1f | %.3f | %.1f |", l.model.c_str(), l.name.c_str(), op, mflop, ms, mflop / ms);
  if (im2col_ms > 0) std::printf(" %.1f |\n", mflop / im2col_ms);
  else std::printf(" |\n");
}

void time_conv(const Layer& l, int64_t batch, int runs) {
  kernels::Conv2dGeometry geometry;
  geometry.padding = l.padding;
  const int64_t out_size = l.size + 2 * l.padding - l.kernel + 1;
  Tensor x = randn({batch, l.in, l.size, l.size}), w = randn({l.out, l.in, l.kernel, l.kernel}), b = randn({l.out});
  Tensor y = empty({batch, l.out, out_size, out_size}), g = randn({batch, l.out, out_size, out_size});
  Tensor gx = empty_like(x), gw = empty_like(w);
  const double mflop = 2.0 * batch * l.out * out_size * out_size * l.in * l.kernel * l.kernel / 1e6;
  auto [f, fi] = both_paths(runs, [&] { kernels::conv2d_forward(x, w, b, geometry, y); });
  row(l, "forward", mflop, f, fi);
  if (!l.first) {
    auto [bi, bii] = both_paths(runs, [&] { kernels::conv2d_backward_input(g, w, geometry, gx); });
    row(l, "input grad", mflop, bi, bii);
  }
  auto [bw, bwi] = both_paths(runs, [&] { kernels::conv2d_backward_weight(g, x, geometry, gw); });
  row(l, "weight grad", mflop, bw, bwi);
}

void time_linear(const Layer& l, int64_t batch, int runs) {
  Tensor x = randn({batch, l.in}), w = randn({l.out, l.in}), g = randn({batch, l.out});
  Tensor y = empty({batch, l.out}), gx = empty_like(x), gw = empty_like(w);
  const double mflop = 2.0 * batch * l.in * l.out / 1e6;
  row(l, "forward", mflop, median_ms(runs, [&] { kernels::matmul(x, w.t(), y); }), 0);
  if (!l.first) row(l, "input grad", mflop, median_ms(runs, [&] { kernels::matmul(g, w, gx); }), 0);
  row(l, "weight grad", mflop, median_ms(runs, [&] { kernels::matmul(g.t(), x, gw); }), 0);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t batch = 256;
  int runs = 21;
  CLI::App app{"layer_roofline: GFLOP/s of each weighted layer's forward and backward on duet's CPU kernels"};
  app.add_option("--batch", batch, "Images per call")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--runs", runs, "Timings per figure; the median is reported")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    manual_seed(0);
    std::printf("| model | layer | pass | MFLOP | ms | GFLOP/s | GFLOP/s im2col |\n|---|---|---|---|---|---|---|\n");
    for (const Layer& l : kLayers) {
      if (l.kernel > 0) time_conv(l, batch, runs);
      else time_linear(l, batch, runs);
    }
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "layer_roofline: %s\n", e.what());
    return 1;
  }
}
