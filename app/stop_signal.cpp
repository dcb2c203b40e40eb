#include "app/stop_signal.h"

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <stdexcept>

namespace tfm {
namespace {

int g_pipe[2] = {-1, -1};

extern "C" void on_stop_signal(int signal) {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  const char byte = static_cast<char>(signal);
  const int saved = errno;
  [[maybe_unused]] const ssize_t written = ::write(g_pipe[1], &byte, 1);  // async-signal-safe
  errno = saved;
}

}  // namespace

StopSignal::StopSignal() {
  if (::pipe(g_pipe) != 0) throw std::runtime_error("cannot create the pipe for SIGINT/SIGTERM");
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

StopSignal::~StopSignal() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  ::close(g_pipe[0]);
  ::close(g_pipe[1]);
  g_pipe[0] = g_pipe[1] = -1;
}

int StopSignal::wait() {
  char byte = 0;
  for (;;) {
    const ssize_t got = ::read(g_pipe[0], &byte, 1);
    if (got == 1) return static_cast<unsigned char>(byte);
    if (got < 0 && errno == EINTR) continue;
    return 0;
  }
}

void StopSignal::cancel() {
  const char byte = 0;
  [[maybe_unused]] const ssize_t written = ::write(g_pipe[1], &byte, 1);
}

}  // namespace tfm
