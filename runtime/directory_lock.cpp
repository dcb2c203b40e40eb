#include "runtime/directory_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace tfm {

DirectoryLock::DirectoryLock(const std::string& dir, const std::string& flag, const std::string& command) {
  const std::string path = (std::filesystem::path(dir) / ".lock").string();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error(path + ": cannot open the lock file (" + std::strerror(errno) + ")");
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    char holder[32] = {};
    const ssize_t n = ::pread(fd_, holder, sizeof(holder) - 1, 0);
    ::close(fd_);
    fd_ = -1;
    const std::string pid = n > 0 ? std::string(holder, static_cast<size_t>(n)) : std::string("?");
    throw std::runtime_error(flag + " " + dir + " is in use by another " + command + " (pid " +
                             pid.substr(0, pid.find('\n')) + "); wait for it or choose another directory");
  }
  // The holder's pid, for the message above (the lock itself is the flock, not the content).
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
    // Not fatal: the flock is held; only the pid in a competitor's message would be missing.
  }
}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);  // closing drops the flock
}

}  // namespace tfm
