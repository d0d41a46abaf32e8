#include "save_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "duet/core/error.h"

namespace duet::apps {
namespace {

// "process 1234 (duet train --save x ...)", from the lock file's process id and, where that
// process still runs on this machine, its command line.
std::string holder(int fd) {
  char text[32] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  const long pid = n > 0 ? std::strtol(text, nullptr, 10) : 0;
  if (pid <= 0) return "another process";
  std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string command((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
  for (char& c : command) c = c == '\0' ? ' ' : c;
  while (!command.empty() && command.back() == ' ') command.pop_back();
  if (command.size() > 120) command = command.substr(0, 117) + "...";
  return "process " + std::to_string(pid) + (command.empty() ? "" : " (" + command + ")");
}

// The open file is still the one at `path`: the holder before us did not remove it between
// our open and our lock.
bool still_linked(int fd, const std::string& path) {
  struct stat open_file {
  }, named{};
  return ::fstat(fd, &open_file) == 0 && ::stat(path.c_str(), &named) == 0 && open_file.st_dev == named.st_dev &&
         open_file.st_ino == named.st_ino;
}

}  // namespace

std::string save_lock_path(const std::string& save_path) { return save_path + ".lock"; }

SaveLock::SaveLock(const std::string& flag, const std::string& save_path) : path_(save_lock_path(save_path)) {
  for (;;) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    DUET_CHECK(fd_ >= 0, flag, " ", save_path, ": cannot create its lock file ", path_, ": ", std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      const std::string who = error == EWOULDBLOCK ? holder(fd_) : "";
      ::close(fd_);
      fd_ = -1;
      DUET_CHECK(error != EWOULDBLOCK, flag, " ", save_path, ": another run is saving there: ", who, " holds ", path_,
                 "; wait for it to finish, or give another --save");
      DUET_FAIL(flag, " ", save_path, ": cannot lock ", path_, ": ", std::strerror(error));
    }
    if (still_linked(fd_, path_)) break;
    ::close(fd_);  // its holder removed it as we opened it: take the new one
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  const bool recorded =
      ::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, pid.data(), pid.size(), 0) == static_cast<ssize_t>(pid.size());
  (void)recorded;  // without the id the lock still holds; a refused run then names no process
}

SaveLock::~SaveLock() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());  // while still locked, so no other run can take this inode
  ::close(fd_);
}

}  // namespace duet::apps
