#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <sys/types.h>

namespace tfm {

/// A file written so that a crash, a power cut or a full disk at any moment leaves either the
/// previous file or the new one whole, never a torn one: the bytes go to PATH.tmp in the same
/// directory, are flushed to disk (fsync), renamed over PATH, and the directory is flushed so
/// that the rename itself is durable. Every file tfm must find intact later is written this way.
class DurableFileWriter {
 public:
  /// Opens PATH.tmp; std::runtime_error naming PATH when it cannot, or when PATH exists and is
  /// not a regular file (a device, a directory: the rename would replace it).
  explicit DurableFileWriter(std::string path);
  /// Not committed (an exception on the way): the temporary file is removed, PATH is untouched.
  ~DurableFileWriter();
  DurableFileWriter(const DurableFileWriter&) = delete;
  DurableFileWriter& operator=(const DurableFileWriter&) = delete;

  /// Appends. Never throws: the first failure (say, a full disk) is remembered, later writes are
  /// dropped, and commit() reports it. (Writers such as LibTorch's archive call this from
  /// destructors, where an exception would end the process.)
  void write(const void* data, size_t size);
  /// Overwrites bytes already written, at `offset` (a header completed at the end).
  void write_at(uint64_t offset, const void* data, size_t size);
  /// Flushes, renames into place and flushes the directory. std::runtime_error naming PATH (and
  /// saying the previous file is kept) when any step failed.
  void commit();

  const std::string& path() const { return path_; }

 private:
  /// Writes all of `bytes` at the end, or at `*offset`; failures are remembered, not thrown.
  void write_all(const char* bytes, size_t size, const off_t* offset);
  void flush_buffer();
  void remember(int error);

  std::string path_, temporary_;
  int fd_ = -1;
  int error_ = 0;  // errno of the first failure
  std::string buffer_;
  bool committed_ = false;
};

/// The whole of `bytes` as PATH, durably (DurableFileWriter).
void write_file_durably(const std::string& path, std::string_view bytes);
/// Renames `from` (a durably written file) to `to` in the same directory, and flushes the
/// directory: after a crash either name holds the whole file. std::runtime_error when it cannot.
void rename_durably(const std::string& from, const std::string& to);
/// A copy of `from` as `to`, durably: `to` is always a whole copy of some version of `from`.
void copy_file_durably(const std::string& from, const std::string& to);

}  // namespace tfm
