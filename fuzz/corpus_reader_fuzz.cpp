// The corpus readers: `tfm train`/`tfm prepare` read raw parallel text with ParallelTextReader
// (two aligned files, SGML/XML sets, TSV) and `tfm translate` reads its input with LineStream.
// The first input byte picks the layout; the rest is the file content (halved for two files).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "data/parallel_text_reader.h"
#include "fuzz/fuzz_support.h"
#include "text/line_stream.h"
#include "text/unicode_text.h"

namespace {

void check_pairs(tfm::ParallelTextReader reader) {
  std::vector<tfm::TextPair> pairs;
  int64_t total = 0;
  while (const size_t count = reader.read(pairs, 7)) {
    tfm::fuzz::require(count == pairs.size(), "read() returns the number of pairs it stored");
    for (const auto& pair : pairs) {
      for (const std::string* side : {&pair.source, &pair.target}) {
        tfm::fuzz::require(tfm::is_valid_utf8(*side), "every sentence read is valid UTF-8");
        tfm::fuzz::require(side->find('\n') == std::string::npos, "no sentence holds a newline");
      }
    }
    total += static_cast<int64_t>(count);
  }
  tfm::fuzz::require(total == reader.pairs_read(), "pairs_read() counts every pair returned");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int layout = data[0] % 4;
  ++data;
  --size;
  const size_t half = size / 2;
  try {
    switch (layout) {
      case 0: check_pairs(tfm::ParallelTextReader::open_tsv(tfm::fuzz::write_scratch("corpus.tsv", data, size))); break;
      case 1:
        check_pairs(
            tfm::ParallelTextReader::open_files(tfm::fuzz::write_scratch("corpus.en", data, half),
                                                tfm::fuzz::write_scratch("corpus.de", data + half, size - half)));
        break;
      case 2:
        check_pairs(
            tfm::ParallelTextReader::open_files(tfm::fuzz::write_scratch("set.en.sgm", data, half),
                                                tfm::fuzz::write_scratch("set.de.sgm", data + half, size - half)));
        break;
      default: {
        tfm::LineStream stream(tfm::fuzz::write_scratch("input.txt", data, size));
        std::vector<std::string> lines;
        size_t lines_read = 0;
        while (stream.next_chunk(lines, 5)) {
          tfm::fuzz::require(stream.first_line_number() == lines_read + 1, "chunks continue the line numbering");
          for (const auto& line : lines) tfm::fuzz::require(line.find('\n') == std::string::npos, "one line each");
          lines_read += lines.size();
        }
        break;
      }
    }
  } catch (const std::runtime_error&) {
    // A documented error (naming file and line): what tfm reports with exit 3.
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
