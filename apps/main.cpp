// The `duet` command line. Subcommands parse flags and print results; the work itself
// lives in the library.
#include <CLI/CLI.hpp>

#include <iostream>
#include <thread>

#include "duet/duet.h"
#include "duet/kernels/cuda/runtime.h"

namespace {

void print_info() {
  std::cout << "duet " << DUET_VERSION << "\n"
            << "CUDA backend: " << (duet::cuda::is_built() ? "built" : "not built") << "\n"
            << "CUDA devices: " << duet::cuda::device_count() << "\n"
            << "CPU threads:  " << duet::kernels::num_threads() << " (hardware "
            << std::thread::hardware_concurrency() << ")\n";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"duet: a C++ deep-learning mini-framework with two data-parallel strategies"};
  app.require_subcommand(1);

  CLI::App* info = app.add_subcommand("info", "Show the build and the devices duet can use");
  info->callback(print_info);

  CLI::App* train = app.add_subcommand("train", "Train a model on Fashion-MNIST (not yet available)");
  train->allow_extras();
  train->callback([] {
    std::cout << "duet train is not implemented yet: the models, optimizers, data loader and\n"
                 "trainer arrive with the training issue. Today duet provides tensors, CPU\n"
                 "kernels and autograd (see README.md, \"What works today\").\n";
  });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const duet::Error& e) {
    std::cerr << "duet: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
