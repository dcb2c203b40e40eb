#include "data/prepare_dataset.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "data/parallel_encode.h"
#include "data/progress_meter.h"

namespace tfm {

CleaningReport prepare_split(ParallelTextReader& reader, const Tokenizer& tokenizer, const PrepareOptions& options,
                             const PairSink& keep, const std::string& phase) {
  validate(options.cleaning);
  if (options.chunk_pairs < 1) throw std::invalid_argument("chunk_pairs must be at least 1");
  ProgressMeter progress(reader.describe() + ": " + phase);
  CleaningReport report;
  std::vector<TextPair> text;
  std::vector<EncodedPair> encoded;
  while (reader.read(text, static_cast<size_t>(options.chunk_pairs)) > 0) {
    encode_pairs(tokenizer, text, options.threads, encoded);
    const int64_t first = reader.pairs_read() - static_cast<int64_t>(text.size());
    for (size_t i = 0; i < encoded.size(); ++i) {
      const auto& pair = encoded[i];
      const CleaningRule rule = check_pair(static_cast<int64_t>(pair.source.size()),
                                           static_cast<int64_t>(pair.target.size()), options.cleaning);
      report.count(rule);
      if (rule == CleaningRule::kKept) {
        keep(pair.source, pair.target);
      } else {
        spdlog::debug("{}: dropped ({}: {} and {} subwords)", reader.where(first + static_cast<int64_t>(i)),
                      rule_name(rule), pair.source.size(), pair.target.size());
      }
    }
    progress.update(reader.fraction_read(), std::to_string(reader.pairs_read()) + " pairs");
  }
  const double seconds = progress.seconds();
  spdlog::debug("{}: {} pairs in {:.2f} s ({:.0f} sentences/s)", reader.describe(), report.read, seconds,
                2.0 * static_cast<double>(report.read) / std::max(seconds, 1e-9));
  return report;
}

PreparedSplit prepare_split(ParallelTextReader& reader, const Tokenizer& tokenizer, const PrepareOptions& options) {
  PreparedSplit split;
  split.report = prepare_split(reader, tokenizer, options,
                               [&split](const auto& source, const auto& target) { split.data.append(source, target); });
  return split;
}

}  // namespace tfm
