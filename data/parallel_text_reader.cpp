#include "data/parallel_text_reader.h"

#include <stdexcept>
#include <utility>

#include "text/line_reader.h"
#include "text/segment_reader.h"
#include "text/unicode_text.h"

namespace tfm {

/// One layout of parallel text: yields pairs one at a time.
class ParallelTextReader::Source {
 public:
  virtual ~Source() = default;
  /// Fills `pair` with the next pair; false at the end (after checking both sides ended together).
  virtual bool next(TextPair& pair) = 0;
  virtual std::string where(int64_t index) const = 0;
  virtual std::string describe() const = 0;
  virtual double fraction_read() const { return -1; }
};

namespace {

std::string count_mismatch(const std::string& source_path, int64_t source_count, const std::string& target_path,
                           int64_t target_count, const char* unit) {
  return source_path + " has " + std::to_string(source_count) + " " + unit + " but " + target_path + " has " +
         std::to_string(target_count) + " (line i of one must translate line i of the other)";
}

/// Reads a line and checks it is UTF-8; false at end of file.
bool next_checked(LineReader& reader, std::string& line) {
  if (!reader.next(line)) return false;
  check_utf8(line, reader.where());
  return true;
}

/// Two aligned text files, read in step.
class LinePairs : public ParallelTextReader::Source {
 public:
  LinePairs(const std::string& source_path, const std::string& target_path)
      : source_(source_path), target_(target_path) {}

  bool next(TextPair& pair) override {
    const bool has_source = next_checked(source_, pair.source);
    const bool has_target = next_checked(target_, pair.target);
    if (has_source && has_target) return true;
    if (has_source || has_target) {
      // One side ended early: count the rest of the other so the message gives both totals.
      LineReader& longer = has_source ? source_ : target_;
      for (std::string rest; longer.next(rest);) {
      }
      throw std::runtime_error(
          count_mismatch(source_.path(), source_.line_number(), target_.path(), target_.line_number(), "lines"));
    }
    return false;
  }
  std::string where(int64_t index) const override {
    const std::string line = std::to_string(index + 1);
    return source_.path() + ":" + line + " / " + target_.path() + ":" + line;
  }
  std::string describe() const override { return source_.path() + " + " + target_.path(); }
  double fraction_read() const override { return source_.fraction_read(); }

 private:
  LineReader source_, target_;
};

/// source<TAB>target lines of one file.
class TsvPairs : public ParallelTextReader::Source {
 public:
  explicit TsvPairs(const std::string& path) : reader_(path) {}

  bool next(TextPair& pair) override {
    if (!next_checked(reader_, line_)) return false;
    const size_t tab = line_.find('\t');
    if (tab == std::string::npos || line_.find('\t', tab + 1) != std::string::npos) {
      throw std::runtime_error(reader_.where() + ": expected source<TAB>target, found " +
                               (tab == std::string::npos ? std::string("no TAB") : std::string("more than one TAB")));
    }
    pair.source.assign(line_, 0, tab);
    pair.target.assign(line_, tab + 1, std::string::npos);
    return true;
  }
  std::string where(int64_t index) const override { return reader_.path() + ":" + std::to_string(index + 1); }
  std::string describe() const override { return reader_.path(); }
  double fraction_read() const override { return reader_.fraction_read(); }

 private:
  LineReader reader_;
  std::string line_;
};

/// WMT SGML/XML sets (small: test sets), read whole by the reader `tfm eval` uses.
class SegmentPairs : public ParallelTextReader::Source {
 public:
  SegmentPairs(const std::string& source_path, const std::string& target_path)
      : source_path_(source_path),
        target_path_(target_path),
        source_(read_segments(source_path)),
        target_(read_segments(target_path)) {
    if (source_.size() != target_.size()) {
      throw std::runtime_error(count_mismatch(source_path, static_cast<int64_t>(source_.size()), target_path,
                                              static_cast<int64_t>(target_.size()), "segments"));
    }
  }

  bool next(TextPair& pair) override {
    if (next_ == source_.size()) return false;
    pair.source = std::move(source_[next_]);
    pair.target = std::move(target_[next_]);
    ++next_;
    return true;
  }
  std::string where(int64_t index) const override {
    const std::string segment = " segment " + std::to_string(index + 1);
    return source_path_ + segment + " / " + target_path_ + segment;
  }
  std::string describe() const override { return source_path_ + " + " + target_path_; }

 private:
  std::string source_path_, target_path_;
  std::vector<std::string> source_, target_;
  size_t next_ = 0;
};

}  // namespace

ParallelTextReader ParallelTextReader::open_files(const std::string& source_path, const std::string& target_path) {
  if (is_sgml_path(source_path) || is_sgml_path(target_path)) {
    return ParallelTextReader(std::make_unique<SegmentPairs>(source_path, target_path));
  }
  return ParallelTextReader(std::make_unique<LinePairs>(source_path, target_path));
}

ParallelTextReader ParallelTextReader::open_tsv(const std::string& path) {
  return ParallelTextReader(std::make_unique<TsvPairs>(path));
}

ParallelTextReader::ParallelTextReader(std::unique_ptr<Source> source) : source_(std::move(source)) {}
ParallelTextReader::ParallelTextReader(ParallelTextReader&&) noexcept = default;
ParallelTextReader& ParallelTextReader::operator=(ParallelTextReader&&) noexcept = default;
ParallelTextReader::~ParallelTextReader() = default;

size_t ParallelTextReader::read(std::vector<TextPair>& pairs, size_t max_pairs) {
  pairs.resize(max_pairs);  // keeps the strings' capacity from the previous chunk
  size_t got = 0;
  while (got < max_pairs && source_->next(pairs[got])) ++got;
  pairs.resize(got);
  pairs_read_ += static_cast<int64_t>(got);
  return got;
}

std::string ParallelTextReader::where(int64_t index) const { return source_->where(index); }
std::string ParallelTextReader::describe() const { return source_->describe(); }
double ParallelTextReader::fraction_read() const { return source_->fraction_read(); }

}  // namespace tfm
