#include "output_paths.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "duet/core/error.h"

namespace duet::apps {
namespace {

namespace fs = std::filesystem;

// The folder a file at `path` would go into ("." for a bare file name).
fs::path folder_of(const std::string& path) {
  fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

// Creates and removes a scratch file in `folder`: the one test that also holds for root, for
// read-only mounts and for full disks' inode tables.
void probe_folder(const std::string& flag, const std::string& path, const fs::path& folder) {
  const fs::path probe = folder / (".duet-probe-" + std::to_string(::getpid()));
  std::FILE* file = std::fopen(probe.c_str(), "w");
  DUET_CHECK(file != nullptr, flag, " ", path, ": cannot create files in folder ", folder.string(), ": ",
             std::strerror(errno));
  std::fclose(file);
  std::remove(probe.c_str());
}

}  // namespace

void check_name_fits(const std::string& flag, const std::string& path) {
  DUET_CHECK(!path.empty(), flag, ": the path is empty");
  DUET_CHECK(path.size() < PATH_MAX, flag, " ", path.substr(0, 80), "...: the path is ", path.size(),
             " bytes long; the system takes at most ", PATH_MAX - 1);
  const fs::path folder = folder_of(path);
  long name_max = ::pathconf(folder.c_str(), _PC_NAME_MAX);
  if (name_max <= 0) name_max = NAME_MAX;
  const std::string name = fs::path(path).filename().string();
  DUET_CHECK(name.size() <= static_cast<size_t>(name_max), flag, " ", path, ": the file name is ", name.size(),
             " bytes long, but folder ", folder.string(), " takes names of at most ", name_max);
}

void check_output_file(const std::string& flag, const std::string& path, WriteMode mode) {
  check_name_fits(flag, path);
  std::error_code error;
  const fs::path folder = folder_of(path);
  const fs::file_status folder_status = fs::status(folder, error);
  DUET_CHECK(fs::exists(folder_status), flag, " ", path, ": folder ", folder.string(), " does not exist");
  DUET_CHECK(fs::is_directory(folder_status), flag, " ", path, ": ", folder.string(), " is not a folder");
  const fs::file_status status = fs::status(path, error);
  DUET_CHECK(!fs::is_directory(status), flag, " ", path, ": is a folder, not a file");
  if (fs::exists(status)) {
    std::FILE* file = std::fopen(path.c_str(), "a");  // opens without changing it
    DUET_CHECK(file != nullptr, flag, " ", path, ": cannot write: ", std::strerror(errno));
    std::fclose(file);
    if (mode == WriteMode::in_place) return;
  }
  probe_folder(flag, path, folder);
}

void prepare_output_folder(const std::string& flag, const std::string& path) {
  DUET_CHECK(!path.empty(), flag, ": the path is empty");
  std::error_code error;
  fs::create_directories(path, error);
  DUET_CHECK(!error, flag, " ", path, ": cannot create the folder: ", error.message());
  DUET_CHECK(fs::is_directory(path, error), flag, " ", path, ": is not a folder");
  probe_folder(flag, path, path);
}

void check_gnuplot(const std::string& what, const std::string& alternative) {
  const char* path = std::getenv("PATH");
  std::stringstream folders(path ? path : "");
  for (std::string folder; std::getline(folders, folder, ':');) {
    if (!folder.empty() && ::access((fs::path(folder) / "gnuplot").c_str(), X_OK) == 0) return;
  }
  DUET_FAIL(what, ": gnuplot is not on the PATH; install Debian's gnuplot-nox package (make installs it)", alternative);
}

}  // namespace duet::apps
