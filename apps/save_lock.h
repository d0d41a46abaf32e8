// One writer per checkpoint. Two runs saving to the same --save path would both write it in
// turn, and each would print a "best" line about a file the other may have replaced: the first
// run holds an advisory lock (flock) for its whole run, and a second one is refused at start.
//
// The lock is taken on a file beside the checkpoint, NAME.lock, since every save replaces the
// checkpoint's own inode (save_safetensors writes a new file and renames it over the old one).
// The holder writes its process id into it, so that a refused run can say who holds it, and
// removes it when the run ends; one that a killed run left behind holds no lock and is reused.
#pragma once

#include <string>

namespace duet::apps {

// The lock file of checkpoint `save_path`.
std::string save_lock_path(const std::string& save_path);

class SaveLock {
 public:
  // Takes the lock of `save_path`, or throws duet::Error naming `flag`, the path and the
  // process that holds it.
  SaveLock(const std::string& flag, const std::string& save_path);
  ~SaveLock();
  SaveLock(const SaveLock&) = delete;
  SaveLock& operator=(const SaveLock&) = delete;

 private:
  std::string path_;  // the lock file
  int fd_ = -1;
};

}  // namespace duet::apps
