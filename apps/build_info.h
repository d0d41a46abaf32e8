// Where a result came from: the commit duet was built from, the checkout's commit now, the
// machine's CPU and the time, for the metadata of the files `duet regime` writes.
#pragma once

#include <string>

namespace duet::apps {

struct BuildInfo {
  // The commit of the source tree at build time (cmake/DuetCommit.cmake refreshes it at every
  // build), "-dirty" when tracked files had changes; "unknown" when built outside a checkout.
  std::string built_commit;
  // `git rev-parse` in that source tree now, when it still is a git checkout; "" otherwise. It
  // differs from built_commit when the binary is older than the checkout (rebuild).
  std::string checkout_commit;
};
BuildInfo build_info();

struct MachineInfo {
  std::string cpu_model;  // /proc/cpuinfo's "model name" ("unknown" where there is none)
  int hardware_threads = 0;
  int process_cores = 0;  // those this process may run on
};
MachineInfo machine_info();

// Now in UTC, ISO 8601: "2026-12-07T05:43:34Z".
std::string utc_now();

}  // namespace duet::apps
