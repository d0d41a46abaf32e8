#include "file_collisions.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "duet/core/error.h"

namespace duet::apps {
namespace {

namespace fs = std::filesystem;

struct FileIdentity {
  fs::path resolved;  // absolute, with every link and ".." that exists resolved
  std::optional<std::pair<dev_t, ino_t>> inode;
};

FileIdentity identify(const std::string& path) {
  FileIdentity id;
  std::error_code error;
  fs::path absolute = fs::absolute(path, error);
  if (error) absolute = fs::path(path);
  id.resolved = fs::weakly_canonical(absolute, error);
  if (error) id.resolved = absolute.lexically_normal();
  struct stat status {};
  if (::stat(path.c_str(), &status) == 0) id.inode = std::make_pair(status.st_dev, status.st_ino);
  return id;
}

bool same_file(const FileIdentity& a, const FileIdentity& b) {
  return a.resolved == b.resolved || (a.inode && b.inode && *a.inode == *b.inode);
}

bool allowed(const std::vector<std::pair<std::string, std::string>>& may_share, const std::string& a,
             const std::string& b) {
  return std::any_of(may_share.begin(), may_share.end(), [&](const auto& pair) {
    return (pair.first == a && pair.second == b) || (pair.first == b && pair.second == a);
  });
}

}  // namespace

std::vector<RunFile> dataset_files(const std::string& dir) {
  std::vector<RunFile> files;
  for (const char* stem :
       {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}) {
    for (const char* suffix : {"", ".gz"}) {
      files.push_back({"--data-dir's file", (fs::path(dir) / (std::string(stem) + suffix)).string()});
    }
  }
  return files;
}

void check_no_collisions(const std::vector<RunFile>& files,
                         const std::vector<std::pair<std::string, std::string>>& may_share) {
  std::vector<FileIdentity> ids;
  for (const RunFile& file : files) ids.push_back(identify(file.path));
  for (size_t i = 0; i < files.size(); ++i) {
    for (size_t j = i + 1; j < files.size(); ++j) {
      if (!files[i].written && !files[j].written) continue;  // two inputs may be one file
      if (!same_file(ids[i], ids[j]) || allowed(may_share, files[i].role, files[j].role)) continue;
      DUET_FAIL(files[i].role, " ", files[i].path, " and ", files[j].role, " ", files[j].path, " are the same file (",
                ids[i].resolved.string(), "): the run would overwrite one with the other; give them different paths");
    }
  }
}

}  // namespace duet::apps
