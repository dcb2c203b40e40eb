#pragma once
// Raw parallel text in the three shapes WMT-style corpora come in, read pair by pair.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tfm {

/// One untokenized sentence pair.
struct TextPair {
  std::string source;
  std::string target;
};

/// Reads aligned sentence pairs, in order, in chunks (so a 4.5M-pair corpus never has to be in
/// memory as text). Three layouts:
/// - two aligned files, one sentence a line, gzip-compressed or not (text/line_reader.h);
/// - WMT SGML/XML test sets (.sgm, .sgml, .xml, optionally .gz): the <seg> texts, entities
///   decoded (read with text/segment_reader.h, as `tfm eval` reads them);
/// - one TSV file: source<TAB>target on each line.
/// Lines are kept as they are (no trimming); cleaning is a separate step (data/cleaning.h).
/// Errors are std::runtime_error naming the file and line: unreadable or truncated files,
/// invalid UTF-8, a TSV line without exactly one TAB, and sides of different lengths (naming
/// both files and both counts).
class ParallelTextReader {
 public:
  /// Two aligned files; if either is SGML/XML (by its name) both are read as SGML/XML.
  static ParallelTextReader open_files(const std::string& source_path, const std::string& target_path);
  /// One file of source<TAB>target lines.
  static ParallelTextReader open_tsv(const std::string& path);

  ParallelTextReader(ParallelTextReader&&) noexcept;
  ParallelTextReader& operator=(ParallelTextReader&&) noexcept;
  ~ParallelTextReader();

  /// Replaces `pairs` with the next (up to) `max_pairs` pairs; returns how many (0 at the end).
  size_t read(std::vector<TextPair>& pairs, size_t max_pairs);
  /// Pairs returned so far.
  int64_t pairs_read() const { return pairs_read_; }
  /// Where 0-based pair `index` came from, for messages: "train.en:12 / train.de:12".
  std::string where(int64_t index) const;
  /// The file(s) read, for messages: "train.en + train.de".
  std::string describe() const;
  /// The share of the (source) file read so far, in [0, 1]; negative when unknown.
  double fraction_read() const;

  class Source;  // one of the three layouts (defined in the .cpp)

 private:
  explicit ParallelTextReader(std::unique_ptr<Source> source);
  std::unique_ptr<Source> source_;
  int64_t pairs_read_ = 0;
};

}  // namespace tfm
