#pragma once
#include <cstdint>
#include <memory>
#include <string>

namespace tfm {

/// Reads a text file one line at a time; gzip-compressed files (any name) are decompressed
/// transparently. The line ending ("\n", or "\r\n") is removed; nothing else is changed.
/// The path "-" reads standard input (named "<stdin>" in messages).
/// Errors are std::runtime_error naming the file (and line, once reading has started).
class LineReader {
 public:
  explicit LineReader(const std::string& path);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  /// Reads the next line into `line`; false at end of file.
  bool next(std::string& line);

  /// 1-based number of the line last returned by next() (0 before the first).
  int64_t line_number() const { return line_number_; }
  const std::string& path() const { return path_; }
  /// "path:line", for error messages.
  std::string where() const;
  /// The share of the file (of its compressed bytes, for gzip) read so far, in [0, 1]; negative
  /// when the size is unknown (standard input, a pipe).
  double fraction_read() const;

 private:
  bool refill();
  struct Handle;
  std::unique_ptr<Handle> handle_;
  std::string path_;
  int64_t line_number_ = 0;
};

}  // namespace tfm
