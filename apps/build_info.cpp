#include "build_info.h"

#include <array>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <thread>

#include "duet_commit.h"
#include "process_cores.h"

namespace duet::apps {
namespace {

// The command's first line of output, or "" when it fails.
std::string first_line_of(const std::string& command) {
  std::FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return "";
  std::array<char, 256> buffer{};
  std::string line;
  if (std::fgets(buffer.data(), buffer.size(), pipe)) line = buffer.data();
  const int status = ::pclose(pipe);
  if (status != 0) return "";
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  return line;
}

}  // namespace

BuildInfo build_info() {
  BuildInfo info{.built_commit = DUET_COMMIT};
  info.checkout_commit = first_line_of("git -C '" DUET_SOURCE_DIR "' rev-parse --short=12 HEAD 2>/dev/null");
  return info;
}

MachineInfo machine_info() {
  MachineInfo info{.cpu_model = "unknown"};
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) info.cpu_model = line.substr(line.find_first_not_of(' ', colon + 1));
      break;
    }
  }
  info.hardware_threads = static_cast<int>(std::thread::hardware_concurrency());
  info.process_cores = process_cores().count;
  return info;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace duet::apps
