// Catch2 main with two extra flags: --requires-gpus N exits 77 (ctest: Skipped) when fewer
// than N CUDA devices are usable, and --requires-cudnn when the build has no cuDNN; each says why.
// Listing (--list-*) never checks, so discovery sees every test.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "duet/kernels/cuda/runtime.h"

int main(int argc, char** argv) {
  std::vector<char*> args;
  int required_gpus = 0;
  bool requires_cudnn = false;
  for (int i = 0; i < argc; ++i) {
    if (std::string(argv[i]) == "--requires-gpus" && i + 1 < argc) {
      required_gpus = std::atoi(argv[++i]);
      continue;
    }
    if (std::string(argv[i]) == "--requires-cudnn") {
      requires_cudnn = true;
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
  return Catch::Session().run(static_cast<int>(args.size()), args.data());
}
