#include "decode/greedy_search.h"

#include <torch/torch.h>

#include "decode/step_rules.h"
#include "text/special_ids.h"

namespace tfm {
namespace {

/// One sentence being decoded greedily.
struct GreedyRow {
  int64_t index = 0;    // position in the caller's batch
  int64_t max_len = 0;  // output tokens allowed, eos included
  std::vector<int64_t> tokens;
  double log_prob = 0.0;
};

Hypothesis finish(GreedyRow& row, double alpha) {
  Hypothesis hypothesis;
  hypothesis.log_prob = row.log_prob;
  hypothesis.score = row.log_prob / length_penalty(static_cast<int64_t>(row.tokens.size()) + 1, alpha);
  hypothesis.tokens = std::move(row.tokens);
  return hypothesis;
}

}  // namespace

std::vector<std::vector<Hypothesis>> greedy_search(Scorer& scorer, const torch::Tensor& source,
                                                   const std::vector<int64_t>& source_lengths,
                                                   const BeamOptions& options) {
  validate(options);
  const int64_t batch = source.size(0);
  const auto device = source.device();
  std::vector<std::vector<Hypothesis>> results(batch);
  std::vector<GreedyRow> active(batch);
  for (int64_t b = 0; b < batch; ++b) {
    active[b].index = b;
    active[b].max_len = max_output_length(source_lengths.at(b), options);
  }
  auto state = scorer.start(source);
  auto last_tokens = torch::full({batch}, kBosId, torch::TensorOptions(torch::kLong).device(device));  // [N]
  for (int64_t step = 0; !active.empty(); ++step) {
    auto log_probs = scorer.step(last_tokens, *state);  // [N, V]
    RowFacts facts;
    for (const auto& row : active) {
      facts.force_eos.push_back(step + 1 >= row.max_len ? 1 : 0);
      facts.history.push_back(&row.tokens);
    }
    apply_step_rules(log_probs, facts, options);
    const auto [best, ids] = log_probs.max(1);  // [N], [N]
    // One copy to the host per step: the scores and the ids (exact in float64 for any vocabulary).
    const auto both = torch::stack({best.to(torch::kDouble), ids.to(torch::kDouble)}).to(torch::kCPU);  // [2, N]
    const auto* scores = both.data_ptr<double>();
    const auto* tokens = scores + both.size(1);

    std::vector<GreedyRow> still_active;
    std::vector<int64_t> keep_rows, next_tokens;
    for (size_t r = 0; r < active.size(); ++r) {
      auto& row = active[r];
      const auto token = static_cast<int64_t>(tokens[r]);
      row.log_prob += scores[r];
      if (token == kEosId) {
        results[row.index] = {finish(row, options.length_penalty)};
        continue;
      }
      row.tokens.push_back(token);
      keep_rows.push_back(static_cast<int64_t>(r));
      next_tokens.push_back(token);
      still_active.push_back(std::move(row));
    }
    if (still_active.empty()) break;
    if (still_active.size() != active.size()) state->reorder(torch::tensor(keep_rows).to(device));
    active = std::move(still_active);
    last_tokens = torch::tensor(next_tokens).to(device);
  }
  return results;
}

std::vector<std::vector<Hypothesis>> search(Scorer& scorer, const torch::Tensor& source,
                                            const std::vector<int64_t>& source_lengths, const BeamOptions& options) {
  if (options.beam == 1 && options.nbest == 1) return greedy_search(scorer, source, source_lengths, options);
  return beam_search(scorer, source, source_lengths, options);
}

}  // namespace tfm
