#include "plot.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "duet/core/error.h"

namespace duet::apps {

void plot_history(const std::vector<parallel::EpochStats>& history, const std::string& png_path,
                  const std::string& title) {
  DUET_CHECK(!history.empty(), "--plot: no epochs to plot");
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("duet-plot-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path data = dir / "history.dat", script = dir / "plot.gp";
  {
    std::ofstream out(data);
    for (const auto& e : history) {
      out << e.epoch + 1 << ' ' << e.train_loss << ' ' << e.train_accuracy << ' ' << e.test_accuracy << '\n';
    }
  }
  {
    std::ofstream gp(script);
    gp << "set terminal pngcairo size 1000,400 font ',10'\n"
       << "set output '" << png_path << "'\n"
       << "set multiplot layout 1,2 title '" << title << "'\n"
       << "set xlabel 'epoch'\nset grid\nset key top right\n"
       << "set ylabel 'loss'\nplot '" << data.string() << "' using 1:2 with linespoints title 'train loss'\n"
       << "set ylabel 'accuracy'\nset key bottom right\n"
       << "plot '" << data.string() << "' using 1:3 with linespoints title 'train acc', "
       << "'' using 1:4 with linespoints title 'test acc'\n"
       << "unset multiplot\n";
  }
  std::string command = "gnuplot '" + script.string() + "' 2>&1";
  int status = std::system(command.c_str());
  fs::remove_all(dir);
  DUET_CHECK(status == 0, "--plot: gnuplot failed (exit status ", status,
             "); install Debian's gnuplot-nox package, which make installs");
}

}  // namespace duet::apps
