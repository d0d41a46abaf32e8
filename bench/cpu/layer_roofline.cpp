// The roofline per layer: each weighted layer of mlp, lenet and lenet-relu (and resnet18's stride-1
// convolutions), forward, input gradient and weight gradient, timed alone in f32 on duet's CPU
// kernels, on a batch of 256 (resnet18: 32) and
// reported as GFLOP/s (2 * M * N * K FLOPs per GEMM, as docs/performance.md counts them).
// Convolutions are timed on both paths: the kernel conv2d.cpp picks, and im2col + GEMM
// (DUET_CONV_IM2COL=1). Medians of --runs timings; one Markdown table on stdout, after the
// machine's FMA ceiling: what the cores' vector FMA units do with no memory access at all.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
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
  int64_t batch = 256;
};

const std::vector<Layer> kLayers = {
    {"mlp", "784->256", 784, 256, 0, 0, 0, true},
    {"mlp", "256->10", 256, 10, 0, 0, 0, false},
    {"lenet", "conv 1->6 5x5 p2", 1, 6, 28, 5, 2, true},
    {"lenet", "conv 6->16 5x5", 6, 16, 14, 5, 0, false},
    {"lenet", "400->120", 400, 120, 0, 0, 0, false},
    {"lenet", "120->84", 120, 84, 0, 0, 0, false},
    {"lenet", "84->10", 84, 10, 0, 0, 0, false},
    {"lenet-relu", "conv 1->20 3x3", 1, 20, 28, 3, 0, true},
    {"lenet-relu", "conv 20->50 5x5", 20, 50, 13, 5, 0, false},
    {"lenet-relu", "800->128", 800, 128, 0, 0, 0, false},
    {"lenet-relu", "128->10", 128, 10, 0, 0, 0, false},
    // resnet18's stride-1 3x3 convolutions, per stage (its stride-2 ones stay on im2col)
    {"resnet18", "conv 64->64 3x3 p1", 64, 64, 28, 3, 1, false, 32},
    {"resnet18", "conv 128->128 3x3 p1", 128, 128, 14, 3, 1, false, 32},
    {"resnet18", "conv 256->256 3x3 p1", 256, 256, 7, 3, 1, false, 32},
    {"resnet18", "conv 512->512 3x3 p1", 512, 512, 4, 3, 1, false, 32},
};

double median_ms(int runs, const std::function<void()>& fn) {
  // Warm-up: first allocations, caches, and the cores' clocks (on this project's VM the first
  // 10 to 20 ms of work after a pause run at a third of the speed).
  const auto warm = std::chrono::steady_clock::now();
  do fn();
  while (std::chrono::steady_clock::now() - warm < std::chrono::milliseconds(50));
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
  std::printf("| %s | %s | %s | %lld | %.1f | %.3f | %.1f |", l.model.c_str(), l.name.c_str(), op,
              static_cast<long long>(l.batch), mflop, ms, mflop / ms);
  if (im2col_ms > 0) std::printf(" %.1f |\n", mflop / im2col_ms);
  else std::printf(" |\n");
}

void time_conv(const Layer& l, int runs) {
  const int64_t batch = l.batch;
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
  auto [bw, bwi] = both_paths(runs, [&] { kernels::conv2d_backward_weight(g, x, geometry, gw, Tensor()); });
  row(l, "weight grad", mflop, bw, bwi);
}

void time_linear(const Layer& l, int runs) {
  const int64_t batch = l.batch;
  Tensor x = randn({batch, l.in}), w = randn({l.out, l.in}), g = randn({batch, l.out});
  Tensor y = empty({batch, l.out}), gx = empty_like(x), gw = empty_like(w);
  const double mflop = 2.0 * batch * l.in * l.out / 1e6;
  row(l, "forward", mflop, median_ms(runs, [&] { kernels::matmul(x, w.t(), y); }), 0);
  if (!l.first) row(l, "input grad", mflop, median_ms(runs, [&] { kernels::matmul(g, w, gx); }), 0);
  row(l, "weight grad", mflop, median_ms(runs, [&] { kernels::matmul(g.t(), x, gw); }), 0);
}

// GFLOP/s of `threads` threads each running 12 independent chains of 64-byte vector FMAs (as
// many as the FMA units' latency needs in flight), best of 5 trials.
double fma_ceiling(int threads) {
  typedef float Vec __attribute__((vector_size(64)));
  constexpr int kChains = 12;
  constexpr int64_t kIterations = 20'000'000;
  double best = 0;
  for (int trial = 0; trial < 5; ++trial) {
    std::vector<float> sink(static_cast<size_t>(threads));
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&sink, t] {
        Vec acc[kChains], a = Vec{} + 0.999999f, b = Vec{} + 1e-7f;
        for (int c = 0; c < kChains; ++c) acc[c] = Vec{} + static_cast<float>(c);
        for (int64_t i = 0; i < kIterations; ++i) {
          for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * a + b;
        }
        float total = 0;
        for (int c = 0; c < kChains; ++c) total += acc[c][0];
        sink[static_cast<size_t>(t)] = total;  // keeps the loop
      });
    }
    for (std::thread& th : pool) th.join();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double flops = 2.0 * 16 * kChains * static_cast<double>(kIterations) * threads;
    best = std::max(best, flops / seconds / 1e9);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 21;
  std::string only_model;
  CLI::App app{"layer_roofline: GFLOP/s of each weighted layer's forward and backward on duet's CPU kernels"};
  app.add_option("--runs", runs, "Timings per figure; the median is reported")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--model", only_model, "Only this model's layers (mlp, lenet, lenet-relu, resnet18)")
      ->check(CLI::IsMember({"mlp", "lenet", "lenet-relu", "resnet18"}));
  CLI11_PARSE(app, argc, argv);
  try {
    manual_seed(0);
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    std::printf("FMA ceiling: %.1f GFLOP/s on 1 thread, %.1f on %d threads\n\n", fma_ceiling(1), fma_ceiling(cores),
                cores);
    std::printf(
        "| model | layer | pass | batch | MFLOP | ms | GFLOP/s | GFLOP/s im2col "
        "|\n|---|---|---|---|---|---|---|---|\n");
    for (const Layer& l : kLayers) {
      if (!only_model.empty() && l.model != only_model) continue;
      if (l.kernel > 0) time_conv(l, runs);
      else time_linear(l, runs);
    }
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "layer_roofline: %s\n", e.what());
    return 1;
  }
}
