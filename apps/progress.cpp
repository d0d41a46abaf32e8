#include "progress.h"

#include <unistd.h>

#include <cmath>

namespace duet::apps {

ProgressBar::ProgressBar(std::FILE* out, int64_t epochs)
    : out_(out), terminal_(::isatty(::fileno(out)) != 0), epochs_(epochs) {}

std::string format_duration(double seconds) {
  auto s = static_cast<int64_t>(std::llround(std::max(seconds, 0.0)));
  if (s < 60) return std::to_string(s) + "s";
  char text[32];
  std::snprintf(text, sizeof text, "%lld:%02lld", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  return text;
}

void ProgressBar::update(const parallel::StepProgress& p) {
  double fraction = static_cast<double>(p.step) / static_cast<double>(std::max<int64_t>(p.steps, 1));
  double rate = p.images / std::max(p.seconds, 1e-9);
  double eta = p.seconds / std::max(fraction, 1e-9) - p.seconds;
  if (terminal_) {
    constexpr int kWidth = 30;
    int filled = static_cast<int>(fraction * kWidth);
    std::string bar(static_cast<size_t>(filled), '=');
    if (filled < kWidth) bar += '>';
    bar.resize(kWidth, ' ');
    std::fprintf(out_, "\repoch %lld/%lld [%s] %lld/%lld  %.0f img/s  ETA %s  loss %.4f ",
                 static_cast<long long>(p.epoch + 1), static_cast<long long>(epochs_), bar.c_str(),
                 static_cast<long long>(p.step), static_cast<long long>(p.steps), rate, format_duration(eta).c_str(),
                 p.mean_loss);
    drawn_ = true;
  } else {
    // Plain output: one line per tenth of the epoch, so logs stay short.
    int decile = static_cast<int>(fraction * 10);
    if (decile == last_decile_ || decile == 0) return;
    last_decile_ = decile;
    std::fprintf(out_, "epoch %lld/%lld: %lld/%lld batches, %.0f img/s, ETA %s, loss %.4f\n",
                 static_cast<long long>(p.epoch + 1), static_cast<long long>(epochs_), static_cast<long long>(p.step),
                 static_cast<long long>(p.steps), rate, format_duration(eta).c_str(), p.mean_loss);
  }
  std::fflush(out_);
}

void ProgressBar::finish() {
  if (terminal_ && drawn_) std::fprintf(out_, "\r\033[K");
  std::fflush(out_);
  drawn_ = false;
  last_decile_ = -1;
}

}  // namespace duet::apps
