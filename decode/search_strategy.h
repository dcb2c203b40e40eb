#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include <torch/types.h>

#include "decode/hypothesis.h"
#include "decode/scorer.h"
#include "decode/search_options.h"

namespace tfm {

/// How a batch becomes translations (CTranslate2's SearchStrategy, fairseq's Search): beam search,
/// greedy decoding or sampling, each over the Scorer interface and the logits processors.
class SearchStrategy {
 public:
  virtual ~SearchStrategy() = default;
  /// source: [B, S] (eos-terminated, pad-filled); source_lengths[b] is sentence b's subword count
  /// without eos, for its maximum output length. Returns per sentence its hypotheses, best first.
  virtual std::vector<std::vector<Hypothesis>> search(Scorer& scorer, const torch::Tensor& source,
                                                      const std::vector<int64_t>& source_lengths) = 0;
};

/// Sampling when options.sampling is enabled; else greedy decoding when beam and nbest are 1,
/// beam search otherwise. std::invalid_argument for invalid options.
std::unique_ptr<SearchStrategy> make_search_strategy(const SearchOptions& options);

}  // namespace tfm
