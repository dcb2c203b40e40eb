#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include <torch/types.h>

namespace tfm {

/// Which token each column of a step's log-probabilities stands for: the whole vocabulary in
/// order (column = token id), or a shortlist's sorted ids, where the special ids keep their columns
/// (a shortlist always starts with them, so the logits processors address them as usual).
class TokenColumns {
 public:
  TokenColumns() = default;
  /// ids: [V'] int64, sorted ascending
  explicit TokenColumns(const torch::Tensor& ids);

  bool is_identity() const { return ids_.empty(); }
  int64_t token(int64_t column) const { return ids_.empty() ? column : ids_[static_cast<size_t>(column)]; }
  /// The column of `token`, or -1 where the shortlist leaves it out.
  int64_t column(int64_t token) const {
    if (ids_.empty()) return token;
    const auto found = std::lower_bound(ids_.begin(), ids_.end(), token);
    return found != ids_.end() && *found == token ? static_cast<int64_t>(found - ids_.begin()) : -1;
  }

 private:
  std::vector<int64_t> ids_;
};

}  // namespace tfm
