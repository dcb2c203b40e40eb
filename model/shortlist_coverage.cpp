#include "model/shortlist_coverage.h"

#include <algorithm>

#include <torch/torch.h>

namespace tfm {

void ShortlistCoverage::add(const Shortlist& shortlist, const std::vector<int64_t>& source,
                            const std::vector<int64_t>& target) {
  const auto ids = torch::tensor(source, torch::kLong).view({1, static_cast<int64_t>(source.size())});
  const auto row = shortlist.candidates(ids)[0];  // [C] ascending, no -1 for a batch of one
  const int64_t* begin = row.data_ptr<int64_t>();
  const int64_t* end = begin + row.numel();
  ++sentences;
  candidates += row.numel();
  most_candidates = std::max<int64_t>(most_candidates, row.numel());
  target_tokens += static_cast<int64_t>(target.size());
  for (const int64_t id : target) covered_tokens += std::binary_search(begin, end, id) ? 1 : 0;
}

}  // namespace tfm
