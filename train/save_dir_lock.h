#pragma once
#include <string>

namespace tfm {

/// Exclusive use of a training directory for one `tfm train` process: two runs writing the same
/// checkpoints would overwrite each other's work. An flock on DIR/.lock, which the kernel drops
/// when the process ends however it ends (kill -9 included), so a lock is never left stale.
class SaveDirLock {
 public:
  /// Takes the lock or throws std::runtime_error naming the directory and the holder's pid.
  explicit SaveDirLock(const std::string& save_dir);
  ~SaveDirLock();
  SaveDirLock(const SaveDirLock&) = delete;
  SaveDirLock& operator=(const SaveDirLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace tfm
