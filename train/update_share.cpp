#include "train/update_share.h"

#include <algorithm>

namespace tfm {

UpdateShare share_of_update(size_t first, size_t epoch_batches, size_t per_rank, int rank, int ranks) {
  UpdateShare share;
  const size_t end = std::min(epoch_batches, first + per_rank * static_cast<size_t>(ranks));
  share.consumed = end > first ? end - first : 0;
  share.begin = std::min(end, first + per_rank * static_cast<size_t>(rank));
  share.count = std::min(end, share.begin + per_rank) - share.begin;
  return share;
}

std::vector<size_t> rank_batches(size_t epoch_batches, size_t first, size_t per_rank, int rank, int ranks) {
  std::vector<size_t> mine;
  while (first < epoch_batches) {
    const UpdateShare share = share_of_update(first, epoch_batches, per_rank, rank, ranks);
    for (size_t i = share.begin; i < share.begin + share.count; ++i) mine.push_back(i);
    first += share.consumed;
  }
  return mine;
}

}  // namespace tfm
