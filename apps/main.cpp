// The `duet` command line. Subcommands parse flags and print results; the work itself
// lives in the library.
#include <CLI/CLI.hpp>

#include <iostream>
#include <thread>

#include "compare_command.h"
#include "duet/duet.h"
#include "duet/kernels/cuda/runtime.h"
#include "regime_command.h"
#include "train_command.h"

namespace {

void print_info() {
  std::cout << "duet " << DUET_VERSION << "\n"
            << "CUDA backend: " << (duet::cuda::is_built() ? "built" : "not built") << "\n"
            << "CUDA devices: " << duet::cuda::device_count() << "\n"
            << "CPU threads:  " << duet::kernels::num_threads() << " (hardware " << std::thread::hardware_concurrency()
            << ")\n";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"duet: a C++ deep-learning mini-framework with two data-parallel strategies"};
  app.require_subcommand(1);

  CLI::App* info = app.add_subcommand("info", "Show the build and the devices duet can use");
  info->callback(print_info);

  int exit_code = 0;
  duet::apps::add_train_command(app, exit_code);
  duet::apps::add_compare_command(app, exit_code);
  duet::apps::add_regime_command(app, exit_code);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message and usage
    return 2;     // bad input: one exit code, whatever CLI11's own number

  } catch (const duet::Error& e) {
    std::cerr << "duet: " << e.what() << "\n";
    return 1;
  }
  return exit_code;
}
