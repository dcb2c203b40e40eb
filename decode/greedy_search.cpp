#include "decode/greedy_search.h"

#include <torch/torch.h>

#include "decode/logits_processors.h"
#include "runtime/parallel_jobs.h"
#include "text/special_ids.h"

namespace tfm {
namespace {

/// One sentence being decoded, one row.
struct Row {
  int64_t index = 0;    // position in the caller's batch
  int64_t max_len = 0;  // output tokens allowed, eos included
  std::vector<int64_t> tokens;
  double log_prob = 0.0;
};

}  // namespace

std::vector<std::vector<Hypothesis>> row_search(Scorer& scorer, const torch::Tensor& source,
                                                const std::vector<int64_t>& source_lengths,
                                                const SearchOptions& options, const TokenChoice& choose) {
  validate(options);
  const int64_t batch = source.size(0);
  const auto device = source.device();
  const LogitsProcessors processors(options);
  std::vector<std::vector<Hypothesis>> results(batch);
  std::vector<Row> active(batch);
  for (int64_t b = 0; b < batch; ++b) {
    active[b].index = b;
    active[b].max_len = max_output_length(source_lengths.at(b), options);
  }
  auto state = scorer.start(source);
  auto last_tokens = torch::full({batch}, kBosId, torch::TensorOptions(torch::kLong).device(device));  // [N]
  for (int64_t step = 0; !active.empty(); ++step) {
    adopt_idle_cores();                                 // the cores of batch workers that have run out of batches
    auto log_probs = scorer.step(last_tokens, *state);  // [N, V']
    RowFacts facts;
    facts.step = step;
    const auto columns = state->columns();
    facts.columns = &columns;
    for (const auto& row : active) {
      facts.force_eos.push_back(step + 1 >= row.max_len ? 1 : 0);
      facts.history.push_back(&row.tokens);
    }
    processors.apply(log_probs, facts);
    const auto [ids, scores_of_ids] = choose(log_probs);  // [N] columns, [N]
    // One copy to the host per step: the scores and the ids (exact in float64 for any vocabulary).
    const auto both = torch::stack({scores_of_ids.to(torch::kDouble), ids.to(torch::kDouble)}).to(torch::kCPU);
    const auto* scores = both.data_ptr<double>();  // [2, N]
    const auto* tokens = scores + both.size(1);

    std::vector<Row> still_active;
    std::vector<int64_t> keep_rows, next_tokens;
    for (size_t r = 0; r < active.size(); ++r) {
      auto& row = active[r];
      const auto token = columns.token(static_cast<int64_t>(r), static_cast<int64_t>(tokens[r]));
      row.log_prob += scores[r];
      if (token == kEosId) {
        results[row.index] = {make_hypothesis(std::move(row.tokens), row.log_prob, options.length_penalty)};
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

std::vector<std::vector<Hypothesis>> greedy_search(Scorer& scorer, const torch::Tensor& source,
                                                   const std::vector<int64_t>& source_lengths,
                                                   const SearchOptions& options) {
  return row_search(scorer, source, source_lengths, options, [](const torch::Tensor& log_probs) {
    auto [best, ids] = log_probs.max(1);  // [N], [N]
    return std::make_pair(ids, best);
  });
}

}  // namespace tfm
