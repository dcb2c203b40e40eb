#include "data/prepare_dataset.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <vector>

#include "data/parallel_encode.h"

namespace tfm {

PreparedSplit prepare_split(ParallelTextReader& reader, const Tokenizer& tokenizer, const PrepareOptions& options) {
  validate(options.cleaning);
  if (options.chunk_pairs < 1) throw std::invalid_argument("chunk_pairs must be at least 1");
  const auto start = std::chrono::steady_clock::now();
  PreparedSplit split;
  std::vector<TextPair> text;
  std::vector<EncodedPair> encoded;
  int64_t logged_at = 0;
  while (reader.read(text, static_cast<size_t>(options.chunk_pairs)) > 0) {
    encode_pairs(tokenizer, text, options.threads, encoded);
    const int64_t first = reader.pairs_read() - static_cast<int64_t>(text.size());
    for (size_t i = 0; i < encoded.size(); ++i) {
      const auto& pair = encoded[i];
      const CleaningRule rule = check_pair(static_cast<int64_t>(pair.source.size()),
                                           static_cast<int64_t>(pair.target.size()), options.cleaning);
      split.report.count(rule);
      if (rule == CleaningRule::kKept) {
        split.data.append(pair.source, pair.target);
      } else {
        spdlog::debug("{}: dropped ({}: {} and {} subwords)", reader.where(first + static_cast<int64_t>(i)),
                      rule_name(rule), pair.source.size(), pair.target.size());
      }
    }
    if (reader.pairs_read() - logged_at >= 1000000) {
      logged_at = reader.pairs_read();
      spdlog::info("{}: {} pairs tokenized", reader.describe(), logged_at);
    }
  }
  // Growth by doubling can leave up to half of each array unused; a 4.5M-pair corpus keeps ~1.2 GB, not ~2.4.
  for (TokenizedSide* side : {&split.data.source, &split.data.target}) {
    side->tokens.shrink_to_fit();
    side->offsets.shrink_to_fit();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  spdlog::debug("{}: {} pairs in {:.2f} s ({:.0f} sentences/s)", reader.describe(), split.report.read, seconds,
                2.0 * static_cast<double>(split.report.read) / std::max(seconds, 1e-9));
  return split;
}

}  // namespace tfm
