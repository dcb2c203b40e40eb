#include "data/parallel_dataset.h"

namespace tfm {

void TokenizedSide::append(const std::vector<int64_t>& ids) {
  // Ids come from a Tokenizer, whose vocabulary is far below 2^31.
  tokens.insert(tokens.end(), ids.begin(), ids.end());
  offsets.push_back(static_cast<int64_t>(tokens.size()));
}

void ParallelDataset::append(const std::vector<int64_t>& source_ids, const std::vector<int64_t>& target_ids) {
  source.append(source_ids);
  target.append(target_ids);
}

}  // namespace tfm
