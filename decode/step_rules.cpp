#include "decode/step_rules.h"

#include <algorithm>
#include <limits>

#include <torch/torch.h>

#include "text/special_ids.h"

namespace tfm {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// (row, token) pairs that would repeat an n-gram already in the row's history.
void banned_repeats(const RowFacts& rows, int64_t n, std::vector<int64_t>& banned_rows,
                    std::vector<int64_t>& banned_tokens) {
  for (size_t row = 0; row < rows.history.size(); ++row) {
    const auto& tokens = *rows.history[row];
    const auto size = static_cast<int64_t>(tokens.size());
    if (size < n - 1) continue;
    for (int64_t start = 0; start + n <= size; ++start) {
      // Does tokens[start, start+n-1) equal the last n-1 tokens? Then tokens[start+n-1] is banned.
      if (std::equal(tokens.begin() + start, tokens.begin() + start + n - 1, tokens.end() - (n - 1))) {
        banned_rows.push_back(static_cast<int64_t>(row));
        banned_tokens.push_back(tokens[start + n - 1]);
      }
    }
  }
}

}  // namespace

void apply_step_rules(torch::Tensor& log_probs, const RowFacts& rows, const BeamOptions& options) {
  const auto device = log_probs.device();
  log_probs.select(1, kPadId).fill_(kNegInf);
  log_probs.select(1, kBosId).fill_(kNegInf);
  if (options.unk_penalty != 0.0) log_probs.select(1, kUnkId).sub_(options.unk_penalty);
  if (std::any_of(rows.force_eos.begin(), rows.force_eos.end(), [](uint8_t f) { return f != 0; })) {
    const auto force = torch::tensor(std::vector<int64_t>(rows.force_eos.begin(), rows.force_eos.end()))
                           .to(device, torch::kBool)
                           .unsqueeze(1);  // [N, 1]
    const auto eos = log_probs.select(1, kEosId).clone();  // [N]
    log_probs.masked_fill_(force, kNegInf);
    log_probs.select(1, kEosId).copy_(eos);
  }
  if (options.no_repeat_ngram > 0) {
    std::vector<int64_t> banned_rows, banned_tokens;
    banned_repeats(rows, options.no_repeat_ngram, banned_rows, banned_tokens);
    if (!banned_rows.empty()) {
      log_probs.index_put_({torch::tensor(banned_rows).to(device), torch::tensor(banned_tokens).to(device)},
                           kNegInf);
    }
  }
}

}  // namespace tfm
