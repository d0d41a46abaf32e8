// The machine's single-precision GEMM peak, measured with OpenBLAS: the roofline that
// `make bench` holds duet's GFLOP/s against. Prints one JSON line:
//   {"n": 512, "single_thread_gflops": ..., "concurrent_threads": 2, "concurrent_gflops": ...}
// "concurrent" runs one single-threaded GEMM per core at the same time and adds them up: on a
// VM whose vCPUs are hyperthreads of one core they share its FMA units, and this shows it.
#include <cblas.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

constexpr int kSize = 512;    // 512x512x512: big enough to reach the peak, small enough for L2/L3
constexpr int kRepeats = 20;  // GEMMs per timed trial
constexpr int kTrials = 7;    // the best trial is the peak

struct Matrices {
  std::vector<float> a, b, c;
  Matrices() : a(kSize * kSize), b(kSize * kSize), c(kSize * kSize) {
    for (size_t i = 0; i < a.size(); ++i) {
      a[i] = static_cast<float>(i % 7) * 0.1f;
      b[i] = static_cast<float>(i % 5) * 0.1f;
    }
  }
  void multiply() {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kSize, kSize, kSize, 1.0f, a.data(), kSize, b.data(), kSize,
                0.0f, c.data(), kSize);
  }
};

constexpr double kFlopsPerGemm = 2.0 * kSize * kSize * kSize;

// Best combined GFLOP/s of `threads` threads, each running its own single-threaded GEMMs.
double best_gflops(int threads) {
  std::vector<Matrices> work(static_cast<size_t>(threads));
  double best = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    std::barrier start(threads + 1), finish(threads + 1);
    std::vector<std::jthread> team;
    for (int t = 0; t < threads; ++t) {
      team.emplace_back([&, t] {
        work[static_cast<size_t>(t)].multiply();  // untimed: pages and caches warm
        start.arrive_and_wait();
        for (int r = 0; r < kRepeats; ++r) work[static_cast<size_t>(t)].multiply();
        finish.arrive_and_wait();
      });
    }
    start.arrive_and_wait();
    auto begin = std::chrono::steady_clock::now();
    finish.arrive_and_wait();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    best = std::max(best, threads * kRepeats * kFlopsPerGemm / seconds / 1e9);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  // Optional argument: how many concurrent GEMMs (default: one per hardware thread).
  int threads = argc > 1 ? std::atoi(argv[1]) : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (threads < 1) {
    std::fprintf(stderr, "gemm_peak: expected a positive thread count, got '%s'\n", argv[1]);
    return 2;
  }
  openblas_set_num_threads(1);  // each GEMM on one thread, as duet calls OpenBLAS
  double single = best_gflops(1);
  double concurrent = best_gflops(threads);
  std::printf("{\"n\": %d, \"single_thread_gflops\": %.2f, \"concurrent_threads\": %d, \"concurrent_gflops\": %.2f}\n",
              kSize, single, threads, concurrent);
  return 0;
}
