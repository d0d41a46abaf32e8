// A per-epoch progress bar for the terminal, or plain lines when output is not a terminal.
#pragma once

#include <cstdio>
#include <string>

#include "duet/parallel/trainer.h"

namespace duet::apps {

class ProgressBar {
 public:
  ProgressBar(std::FILE* out, int64_t epochs);
  void update(const parallel::StepProgress& p);
  void finish();  // ends the bar's line before the epoch summary

 private:
  std::FILE* out_;
  bool terminal_;
  int64_t epochs_;
  int last_decile_ = -1;
  bool drawn_ = false;
};

// "1:05" or "12s".
std::string format_duration(double seconds);

}  // namespace duet::apps
