#include "text/line_reader.h"

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace tfm {

struct LineReader::Handle {
  gzFile file = nullptr;
  std::vector<char> buffer = std::vector<char>(1 << 16);
  size_t begin = 0;  // unread bytes are buffer[begin, end)
  size_t end = 0;
  bool eof = false;
  int64_t file_bytes = -1;  // -1: not a regular file
};

LineReader::LineReader(const std::string& path)
    : handle_(std::make_unique<Handle>()), path_(path == "-" ? "<stdin>" : path) {
  errno = 0;
  // gzdopen takes ownership of the descriptor it is given, so standard input is duplicated.
  handle_->file = path == "-" ? gzdopen(dup(STDIN_FILENO), "rb") : gzopen(path.c_str(), "rb");
  if (handle_->file == nullptr) {
    const std::string reason = errno != 0 ? std::strerror(errno) : "cannot open";
    throw std::runtime_error(path + ": " + reason);
  }
  gzbuffer(handle_->file, 1 << 17);  // 128 KiB reads: corpora are read front to back
  struct stat status {};
  if (path != "-" && stat(path.c_str(), &status) == 0 && S_ISREG(status.st_mode)) {
    handle_->file_bytes = static_cast<int64_t>(status.st_size);
  }
}

double LineReader::fraction_read() const {
  if (handle_->file_bytes <= 0) return handle_->file_bytes == 0 ? 1.0 : -1.0;
  const auto offset = static_cast<double>(gzoffset(handle_->file));
  return std::min(1.0, offset / static_cast<double>(handle_->file_bytes));
}

LineReader::~LineReader() {
  if (handle_ && handle_->file != nullptr) gzclose(handle_->file);
}

std::string LineReader::where() const { return path_ + ":" + std::to_string(line_number_); }

// Refills the buffer; false when the file is exhausted.
bool LineReader::refill() {
  Handle& h = *handle_;
  if (h.eof) return false;
  const int got = gzread(h.file, h.buffer.data(), static_cast<unsigned>(h.buffer.size()));
  if (got < 0) {
    int error_code = 0;
    const char* message = gzerror(h.file, &error_code);
    throw std::runtime_error(path_ + ":" + std::to_string(line_number_ + 1) + ": read error (" +
                             (error_code == Z_ERRNO ? std::strerror(errno) : message) + ")");
  }
  if (got == 0) {
    h.eof = true;
    int error_code = 0;
    gzerror(h.file, &error_code);
    if (error_code == Z_BUF_ERROR) {
      throw std::runtime_error(path_ + ": truncated gzip file (unexpected end of compressed data)");
    }
    return false;
  }
  h.begin = 0;
  h.end = static_cast<size_t>(got);
  return true;
}

bool LineReader::next(std::string& line) {
  Handle& h = *handle_;
  line.clear();
  bool read_any = false;
  for (;;) {
    if (h.begin == h.end && !refill()) break;
    read_any = true;
    const char* start = h.buffer.data() + h.begin;
    const void* newline = std::memchr(start, '\n', h.end - h.begin);
    if (newline != nullptr) {
      const size_t length = static_cast<const char*>(newline) - start;
      line.append(start, length);
      h.begin += length + 1;
      break;
    }
    line.append(start, h.end - h.begin);
    h.begin = h.end;
  }
  if (!read_any) return false;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  ++line_number_;
  return true;
}

}  // namespace tfm
