#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace tfm {

class LineReader;

/// Reads input lines in chunks for streaming translation. From a pipe or terminal a chunk ends
/// as soon as no further complete line is ready, so interactive input is answered line by line
/// while piped files still come in large batches. Files (.gz allowed) are read with LineReader.
class LineStream {
 public:
  /// path "-" = standard input.
  explicit LineStream(const std::string& path);
  ~LineStream();
  LineStream(const LineStream&) = delete;
  LineStream& operator=(const LineStream&) = delete;

  /// Replaces `lines` with up to `max_lines` (>= 1) next lines; false once the input is exhausted.
  bool next_chunk(std::vector<std::string>& lines, size_t max_lines);
  /// 1-based number of the first line of the last chunk, for messages.
  size_t first_line_number() const { return first_line_; }
  const std::string& name() const { return name_; }

 private:
  bool read_more(bool block);
  bool take_line(std::string& line);

  std::string name_;
  std::unique_ptr<LineReader> file_;  // for paths; standard input is read below
  std::string pending_;               // stdin bytes not yet split into lines
  bool eof_ = false;
  size_t lines_read_ = 0;
  size_t first_line_ = 0;
};

}  // namespace tfm
