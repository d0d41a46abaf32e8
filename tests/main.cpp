// Catch2 main with three extra flags, each exiting 77 (ctest: Skipped) when what the tests need
// is missing, and saying why: --requires-gpus N, fewer than N usable CUDA devices;
// --requires-cudnn, a build without cuDNN; --requires-dataset, no Fashion-MNIST. Catch2 v2 has no
// SKIP, so a test cannot skip itself without counting as passed.
// Listing (--list-*) never checks, so discovery sees every test.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "duet/data/fashion_mnist.h"
#include "duet/kernels/cuda/runtime.h"

int main(int argc, char** argv) {
  std::vector<char*> args;
  int required_gpus = 0;
  bool requires_cudnn = false, requires_dataset = false;
  for (int i = 0; i < argc; ++i) {
    if (std::string(argv[i]) == "--requires-gpus" && i + 1 < argc) {
      required_gpus = std::atoi(argv[++i]);
      continue;
    }
    if (std::string(argv[i]) == "--requires-cudnn") {
      requires_cudnn = true;
      continue;
    }
    if (std::string(argv[i]) == "--requires-dataset") {
      requires_dataset = true;
      continue;
    }
    args.push_back(argv[i]);
  }
  if (required_gpus > 0) {
    int available = duet::cuda::device_count();
    if (available < required_gpus) {
      std::printf("skipped: needs %d CUDA device(s), found %d\n", required_gpus, available);
      return 77;
    }
  }
  if (requires_cudnn && !duet::cuda::cudnn_is_built()) {
    std::printf("skipped: needs cuDNN, and this build has none (DUET_CUDNN=OFF, or not found at configure time)\n");
    return 77;
  }
  if (requires_dataset) {
    if (std::optional<std::string> missing = duet::data::FashionMNIST::missing_file()) {
      std::printf("skipped: %s/%s(.gz) is missing; install Debian's dataset-fashion-mnist package\n",
                  duet::data::kFashionMnistDir, missing->c_str());
      return 77;
    }
  }
  return Catch::Session().run(static_cast<int>(args.size()), args.data());
}
