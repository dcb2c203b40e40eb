#include "text/line_stream.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "text/line_reader.h"

namespace tfm {

LineStream::LineStream(const std::string& path) : name_(path == "-" ? "<stdin>" : path) {
  if (path != "-") file_ = std::make_unique<LineReader>(path);
}

LineStream::~LineStream() = default;

/// Appends what standard input has; with block = false only if bytes are ready now.
bool LineStream::read_more(bool block) {
  if (eof_) return false;
  if (!block) {
    pollfd ready{STDIN_FILENO, POLLIN, 0};
    if (poll(&ready, 1, 0) <= 0) return false;
  }
  char buffer[1 << 16];
  ssize_t got;
  do {
    got = ::read(STDIN_FILENO, buffer, sizeof(buffer));
  } while (got < 0 && errno == EINTR);
  if (got < 0) throw std::runtime_error(name_ + ": read error (" + std::strerror(errno) + ")");
  if (got == 0) {
    eof_ = true;
    return false;
  }
  pending_.append(buffer, static_cast<size_t>(got));
  return true;
}

/// Moves one complete line (or, at end of input, the unterminated rest) out of pending_.
bool LineStream::take_line(std::string& line) {
  const size_t newline = pending_.find('\n');
  if (newline == std::string::npos) {
    if (!eof_ || pending_.empty()) return false;
    line = std::move(pending_);
    pending_.clear();
  } else {
    line = pending_.substr(0, newline);
    pending_.erase(0, newline + 1);
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return true;
}

bool LineStream::next_chunk(std::vector<std::string>& lines, size_t max_lines) {
  lines.clear();
  first_line_ = lines_read_ + 1;
  if (file_) {
    std::string line;
    while (lines.size() < max_lines && file_->next(line)) lines.push_back(line);
  } else {
    std::string line;
    while (lines.size() < max_lines) {
      if (take_line(line)) {
        lines.push_back(std::move(line));
        continue;
      }
      // Block for input only while the chunk is empty; otherwise hand over what is complete.
      if (read_more(/*block=*/lines.empty())) continue;
      if (eof_ && take_line(line)) lines.push_back(std::move(line));  // an unterminated last line
      break;
    }
  }
  lines_read_ += lines.size();
  return !lines.empty();
}

}  // namespace tfm
