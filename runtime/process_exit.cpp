#include "runtime/process_exit.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#if defined(__SANITIZE_ADDRESS__)
#define TFM_CHECKS_LEAKS_AT_EXIT 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define TFM_CHECKS_LEAKS_AT_EXIT 1
#endif
#endif

namespace tfm {

void exit_without_teardown(int code) {
  std::cout.flush();
  std::cerr.flush();
  std::clog.flush();
  std::fflush(nullptr);
#ifdef TFM_CHECKS_LEAKS_AT_EXIT
  std::exit(code);
#else
  std::_Exit(code);
#endif
}

bool remove_unless_locked_elsewhere(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct flock whole_file {};
  whole_file.l_type = F_WRLCK;
  whole_file.l_whence = SEEK_SET;  // from 0, length 0: the whole file
  // Granted where this process already holds it (POSIX locks are per process) or nobody does.
  const bool removed = ::fcntl(fd, F_SETLK, &whole_file) == 0 && ::unlink(path.c_str()) == 0;
  ::close(fd);
  return removed;
}

}  // namespace tfm
