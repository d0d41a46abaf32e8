// duet's side of bench/overhead/overhead.py: the host's cost per op, which sets the pace of a small
// model's step on a GPU (its kernels take a few microseconds each). One iteration is six ops
// forward on 8-element tensors and their backward; prints the median of `--runs` timings of
// `--iterations` iterations as one JSON line. bench/overhead/overhead_torch.py is its PyTorch twin.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <vector>

#include "duet/duet.h"

using namespace duet;

int main(int argc, char** argv) {
  std::string device_name = "cpu";
  int iterations = 2000, runs = 5;
  CLI::App app{"overhead_bench: microseconds per tiny forward + backward iteration"};
  app.add_option("--device", device_name, "cpu or cuda:N")->capture_default_str();
  app.add_option("--iterations", iterations, "Iterations per timing")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--runs", runs, "Timings; the median is reported")->check(CLI::PositiveNumber)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    const Device device = Device::parse(device_name);
    manual_seed(0);
    Tensor w = randn({8}).to(device).requires_grad_();
    Tensor x = randn({8}).to(device);
    std::vector<double> us;
    for (int run = 0; run <= runs; ++run) {  // run 0 warms up
      auto start = std::chrono::steady_clock::now();
      Tensor loss;
      for (int i = 0; i < iterations; ++i) {
        Tensor y = sigmoid(relu(x * w + x) * 2.0);
        loss = sum(y);
        loss.backward();
        w.set_grad(Tensor());
      }
      loss.item<double>();  // waits for a GPU's queued work
      const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
      if (run > 0) us.push_back(took.count() / iterations);
    }
    std::sort(us.begin(), us.end());
    std::cout << nlohmann::json{{"framework", "duet"},
                                {"device", device.str()},
                                {"us_per_iteration", us[us.size() / 2]}}
                     .dump()
              << std::endl;
    return 0;
  } catch (const Error& e) {
    std::cerr << "overhead_bench: " << e.what() << "\n";
    return 1;
  }
}
