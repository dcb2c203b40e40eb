#include "runtime/durable_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

namespace tfm {
namespace {

// Small writes (zip headers, offsets) gather here; a megabyte keeps system calls rare.
constexpr size_t kBufferBytes = size_t{1} << 20;

/// fsync of a directory by path: what makes a rename inside it survive a power cut.
void flush_directory(const std::string& file) {
  const auto parent = std::filesystem::path(file).parent_path();
  const std::string directory = parent.empty() ? "." : parent.string();
  const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // the file is in place; only its durability across a power cut is unconfirmed
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

DurableFileWriter::DurableFileWriter(std::string path) : path_(std::move(path)), temporary_(path_ + ".tmp") {
  // The rename would replace whatever holds the name: as root, /dev/full or /dev/stdout itself.
  std::error_code error;
  const auto status = std::filesystem::status(path_, error);
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    throw std::runtime_error(path_ +
                             ": not a regular file (tfm writes it beside its name, then renames it into place)");
  }
  fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw std::runtime_error(path_ + ": cannot write (" + temporary_ + ": " + std::strerror(errno) + ")");
  }
  buffer_.reserve(kBufferBytes);
}

DurableFileWriter::~DurableFileWriter() {
  if (committed_) return;
  if (fd_ >= 0) ::close(fd_);
  std::remove(temporary_.c_str());
}

void DurableFileWriter::remember(int error) {
  if (error_ == 0) error_ = error;
}

void DurableFileWriter::write_all(const char* bytes, size_t size, const off_t* offset) {
  for (size_t done = 0; error_ == 0 && done < size;) {
    const ssize_t n = offset ? ::pwrite(fd_, bytes + done, size - done, *offset + static_cast<off_t>(done))
                             : ::write(fd_, bytes + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      remember(n < 0 ? errno : EIO);
      break;
    }
    done += static_cast<size_t>(n);
  }
}

void DurableFileWriter::flush_buffer() {
  write_all(buffer_.data(), buffer_.size(), nullptr);
  buffer_.clear();
}

void DurableFileWriter::write(const void* data, size_t size) {
  if (error_ != 0 || size == 0) return;
  if (buffer_.size() + size > kBufferBytes) flush_buffer();
  if (size >= kBufferBytes) {
    write_all(static_cast<const char*>(data), size, nullptr);  // large blocks skip the buffer
  } else {
    buffer_.append(static_cast<const char*>(data), size);
  }
}

void DurableFileWriter::write_at(uint64_t offset, const void* data, size_t size) {
  flush_buffer();
  const auto position = static_cast<off_t>(offset);
  write_all(static_cast<const char*>(data), size, &position);
}

void DurableFileWriter::commit() {
  flush_buffer();
  if (error_ == 0 && ::fsync(fd_) != 0) remember(errno);
  if (::close(fd_) != 0) remember(errno);
  fd_ = -1;
  if (error_ != 0) {
    std::remove(temporary_.c_str());
    throw std::runtime_error(path_ + ": cannot write (" + std::strerror(error_) + "); the previous file is kept");
  }
  if (std::rename(temporary_.c_str(), path_.c_str()) != 0) {
    const int error = errno;
    std::remove(temporary_.c_str());
    throw std::runtime_error(path_ + ": cannot rename " + temporary_ + " into place (" + std::strerror(error) + ")");
  }
  committed_ = true;
  flush_directory(path_);
}

void write_file_durably(const std::string& path, std::string_view bytes) {
  DurableFileWriter writer(path);
  writer.write(bytes.data(), bytes.size());
  writer.commit();
}

void rename_durably(const std::string& from, const std::string& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0) {
    throw std::runtime_error(to + ": cannot rename " + from + " into place (" + std::strerror(errno) + ")");
  }
  flush_directory(to);
}

void copy_file_durably(const std::string& from, const std::string& to) {
  const int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) throw std::runtime_error(from + ": cannot read (" + std::strerror(errno) + ")");
  DurableFileWriter writer(to);
  std::vector<char> block(kBufferBytes);
  for (;;) {
    const ssize_t n = ::read(in, block.data(), block.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(in);
      throw std::runtime_error(from + ": cannot read (" + std::strerror(error) + ")");
    }
    if (n == 0) break;
    writer.write(block.data(), static_cast<size_t>(n));
  }
  ::close(in);
  writer.commit();
}

}  // namespace tfm
