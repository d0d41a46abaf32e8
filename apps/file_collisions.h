// The files a run reads and writes, checked against each other before any work starts: two
// flags that name the same file by different spellings (relative and absolute, "..", a
// symbolic link, a hard link) would otherwise have one overwrite the other while the run
// reports success.
#pragma once

#include <string>
#include <vector>

namespace duet::apps {

struct RunFile {
  std::string role;  // how the user named it: "--metrics", "--save's .best copy"
  std::string path;
  bool written = false;
};

// The Fashion-MNIST files a run reads from `dir`, with and without .gz, whether they exist or
// not (an output there could become one), in the role "--data-dir's file".
std::vector<RunFile> dataset_files(const std::string& dir);

// Throws duet::Error naming both roles and the file when a written file is the same file as
// any other one, unless the two roles are listed together in `may_share` (--save and --resume:
// a run continues the checkpoint it replaces). Two files are the same when their paths
// resolve to one (symbolic links and ".." followed), or, where both exist, when they have one
// device and inode (hard links). Reads nothing but the file system's names.
void check_no_collisions(const std::vector<RunFile>& files,
                         const std::vector<std::pair<std::string, std::string>>& may_share = {});

}  // namespace duet::apps
