#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include <torch/types.h>

#include "decode/scorer.h"
#include "decode/search_strategy.h"

namespace tfm {

/// Translates a batch by beam search (§6.1). source: [B, S] (eos-terminated, pad-filled);
/// source_lengths[b] is sentence b's subword count without eos, for the maximum output length.
/// Returns, per sentence, up to `nbest` hypotheses, best first. Stops a sentence once no
/// unfinished hypothesis can still beat its n-best finished ones (or at the maximum length),
/// and drops it from the batch.
std::vector<std::vector<Hypothesis>> beam_search(Scorer& scorer, const torch::Tensor& source,
                                                 const std::vector<int64_t>& source_lengths,
                                                 const SearchOptions& options);

/// A sentence that left a BeamSearchStream: the tag it was added with, its hypotheses best first.
struct FinishedSentence {
  int64_t tag = 0;
  std::vector<Hypothesis> nbest;
};

/// Beam search one step at a time over a batch that new sentences may join between steps
/// (continuous batching: a server adds the sentences of requests that arrived while others
/// decode, instead of holding them until the whole batch is done). Each sentence is searched
/// as beam_search() would search it alone (its own step count, length limits and stopping rule),
/// and leaves as soon as it is done.
class BeamSearchStream {
 public:
  BeamSearchStream(Scorer& scorer, const SearchOptions& options);
  ~BeamSearchStream();
  BeamSearchStream(const BeamSearchStream&) = delete;
  BeamSearchStream& operator=(const BeamSearchStream&) = delete;
  /// Starts the sentences of `source` ([B, S], eos-terminated, pad-filled; source_lengths as
  /// beam_search()); tags[b] names sentence b in step()'s results. While others are in flight,
  /// only with a scorer that joins() (std::logic_error otherwise).
  void add(const torch::Tensor& source, const std::vector<int64_t>& source_lengths, const std::vector<int64_t>& tags);
  /// One step for every sentence in flight; returns the sentences that finished in it.
  std::vector<FinishedSentence> step();
  /// Sentences in flight.
  size_t sentences() const;
  bool empty() const { return sentences() == 0; }

 private:
  struct Search;  // the sentences in flight and the scorer's state (beam_search.cpp)
  std::unique_ptr<Search> search_;
};

class BeamSearch : public SearchStrategy {
 public:
  explicit BeamSearch(const SearchOptions& options) : options_(options) {}
  std::vector<std::vector<Hypothesis>> search(Scorer& scorer, const torch::Tensor& source,
                                              const std::vector<int64_t>& source_lengths) override {
    return beam_search(scorer, source, source_lengths, options_);
  }

 private:
  SearchOptions options_;
};

}  // namespace tfm
