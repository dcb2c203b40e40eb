#pragma once
#include <string>

namespace tfm {

/// Exclusive use of an output directory by one tfm process: two `tfm train` runs writing the same
/// checkpoints, or two `tfm prepare` runs writing the same shards, would overwrite each other's
/// work. An flock on DIR/.lock, which the kernel drops when the process ends however it ends
/// (kill -9 included), so a lock is never left stale.
class DirectoryLock {
 public:
  /// Takes the lock or throws std::runtime_error: "<flag> DIR is in use by another <command>
  /// (pid N); ..." (flag and command as the user knows them: "--save-dir", "tfm train").
  DirectoryLock(const std::string& dir, const std::string& flag, const std::string& command);
  ~DirectoryLock();
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace tfm
