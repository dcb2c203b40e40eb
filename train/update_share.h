#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tfm {

/// How one update's batches are split between data-parallel ranks. An update takes the next
/// `per_rank` x `ranks` batches of the epoch (fewer at its end); rank r takes the r-th run of
/// `per_rank` of them. Rank r's share of batches [first, first + per_rank * ranks) is thus what one
/// process with --update-freq per_rank*ranks would accumulate in that update, in the same order,
/// so both runs take the same steps. Near the epoch's end a rank may get fewer batches, or none
/// (it then contributes zero gradients), but every rank takes every update.
struct UpdateShare {
  size_t begin = 0;     // this rank's first batch (an index into the epoch's batches)
  size_t count = 0;     // this rank's batches in the update
  size_t consumed = 0;  // batches the update takes from the epoch, over all ranks
};

UpdateShare share_of_update(size_t first, size_t epoch_batches, size_t per_rank, int rank, int ranks);

/// Rank `rank`'s batches (indices into the epoch's), update after update, from batch `first` of the
/// epoch to its end: what its prefetcher collates, in the order share_of_update hands them out.
std::vector<size_t> rank_batches(size_t epoch_batches, size_t first, size_t per_rank, int rank, int ranks);

}  // namespace tfm
