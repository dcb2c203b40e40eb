#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <torch/serialize/archive.h>
#include <torch/types.h>

namespace tfm {

/// A lexical shortlist (Marian's lexical shortlist, CTranslate2's vocabulary map): for each source
/// token, the target tokens that may translate it. Decoding, the output projection of each sentence
/// covers only its source tokens' candidates, the most frequent target tokens and the special ids,
/// instead of the whole vocabulary.
class Shortlist {
 public:
  Shortlist() = default;
  /// frequent: [F] target ids always included; offsets: [V + 1], non-decreasing from 0; targets:
  /// [E] target ids, those of source token s at offsets[s] .. offsets[s+1]-1. Throws
  /// std::invalid_argument when the pieces do not fit together or an id is outside the vocabulary.
  Shortlist(int64_t vocab_size, std::vector<int64_t> frequent, std::vector<int64_t> offsets,
            std::vector<int32_t> targets);

  bool empty() const { return vocab_size_ == 0; }
  int64_t vocab_size() const { return vocab_size_; }
  /// Throws std::invalid_argument unless the shortlist is over a vocabulary of `vocab_size`.
  void check_vocabulary(int64_t vocab_size) const;
  /// source: [B, S] ids on any device -> [B, C] int64 on the CPU: row b holds every id sentence b
  /// may produce, sorted ascending (the special ids 0 .. kNumSpecialIds-1 always first), then -1 up
  /// to C, the most any sentence of the batch has. Each sentence's own: what a sentence may produce
  /// does not depend on the others in its batch, nor on its padding (pad's list, if any, is not read).
  torch::Tensor candidates(const torch::Tensor& source) const;
  /// The candidates of source token `source_id` (the frequent ones not included).
  std::vector<int64_t> candidates_of(int64_t source_id) const;
  /// [min(count, V)] int64, ascending: the ids most sentences' lists are likely to hold, chosen
  /// from the shortlist alone: the special ids and the frequent ones, then those the most source
  /// tokens list (ties: the lower id). A batch's lists share them (model/shortlist_shared.h).
  torch::Tensor shared_targets(int64_t count) const;
  const std::vector<int64_t>& frequent() const { return frequent_; }
  int64_t entries() const { return static_cast<int64_t>(targets_.size()); }
  /// Nats added to the estimate of the log-mass of the tokens a sentence's list leaves out
  /// (model/shortlist_logits.h), measured on held-out steps by calibrate_shortlist
  /// (model/shortlist_calibration.h); 0 in a file written before there was one.
  double rest_correction() const { return rest_correction_; }
  /// Throws std::invalid_argument unless `nats` is finite.
  void set_rest_correction(double nats);

  /// Into its own sub-archive of a model file.
  void write(torch::serialize::OutputArchive& archive) const;
  /// Throws std::runtime_error naming `origin` when the stored shortlist is damaged or does not
  /// match `vocab_size`.
  static Shortlist read(torch::serialize::InputArchive& archive, int64_t vocab_size, const std::string& origin);

 private:
  int64_t vocab_size_ = 0;
  std::vector<int64_t> frequent_;
  std::vector<int64_t> offsets_;
  std::vector<int32_t> targets_;
  double rest_correction_ = 0;
  std::vector<int64_t> by_listing_;  // every id, the likeliest to be shared first (shared_targets)

  /// The ids ordered as shared_targets() chooses them.
  std::vector<int64_t> rank_by_listing() const;
};

struct ShortlistOptions {
  int64_t per_source = 100;  // candidates kept for each source token (Marian's lexical shortlist keeps 100)
  int64_t frequent = 100;    // most frequent target tokens, always included
  // EM iterations of IBM Model 1 that rank each source token's targets by p(target | source). 0
  // ranks by co-occurrence, which favours whatever target is frequent over the token's translation.
  int64_t iterations = 5;
};

void validate(const ShortlistOptions& options);

/// Counts which target tokens occur in the same sentence pairs as each source token, then keeps
/// for each source token the `per_source` of them with the highest p(target | source), leaving
/// out the `frequent` most frequent targets, which every sentence gets anyway. With `iterations`
/// 0, p(target | source) is the share of the source token's sentences that hold the target (each
/// token counts once per sentence; ties: the lower id). Otherwise it is IBM Model 1's lexical
/// translation probability after that many EM iterations over the pairs (Brown et al. 1993, with
/// a null source word; ties: more co-occurrences, then the lower id), as a word aligner's lexical
/// table gives Marian's shortlist: frequent targets that occur with everything are explained by
/// the tokens they translate, not credited to every token of the sentence.
class ShortlistBuilder {
 public:
  explicit ShortlistBuilder(int64_t vocab_size);
  /// Ids without bos/eos; ids outside the vocabulary throw std::invalid_argument.
  void add(const std::vector<int64_t>& source, const std::vector<int64_t>& target);
  int64_t pairs() const { return pairs_; }
  Shortlist build(const ShortlistOptions& options) const;

 private:
  /// The targets seen with each source token, row by row, ascending.
  struct CooccurrenceRows {
    std::vector<int64_t> starts;     // [V + 1]: row s is entries starts[s] .. starts[s+1]-1
    std::vector<int32_t> targets;    // [E]
    std::vector<uint32_t> together;  // [E] sentence pairs holding both
    /// The entry of (source, target); the pair must have co-occurred.
    int64_t find(int64_t source, int64_t target) const;
  };
  CooccurrenceRows cooccurrence_rows() const;
  /// [E] IBM Model 1's p(target | source) of each entry after `iterations` EM iterations.
  std::vector<double> model1_probabilities(const CooccurrenceRows& rows, int64_t iterations) const;

  int64_t vocab_size_;
  int64_t pairs_ = 0;
  std::vector<int64_t> source_count_;                // [V] sentences containing each source token
  std::vector<int64_t> target_count_;                // [V] sentences containing each target token
  std::unordered_map<uint64_t, uint32_t> together_;  // source * V + target -> sentences with both
  std::vector<int64_t> last_source_pair_;            // [V] the last pair whose source had each id
  std::vector<int64_t> last_target_pair_;            // [V] the same for targets
  // Every pair's ids, for the EM iterations: pair i's source is source_ids_[source_starts_[i] ..
  // source_starts_[i+1]).
  std::vector<int32_t> source_ids_, target_ids_;
  std::vector<int64_t> source_starts_{0}, target_starts_{0};
};

}  // namespace tfm
