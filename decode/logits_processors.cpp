#include "decode/logits_processors.h"

#include <algorithm>
#include <limits>
#include <optional>

#include <torch/torch.h>

#include "text/special_ids.h"

namespace tfm {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// (row, column) pairs whose token would repeat an n-gram already in the row's history.
void banned_repeats(const RowFacts& rows, int64_t n, std::vector<int64_t>& banned_rows,
                    std::vector<int64_t>& banned_tokens) {
  for (size_t row = 0; row < rows.history.size(); ++row) {
    const auto& tokens = *rows.history[row];
    const auto size = static_cast<int64_t>(tokens.size());
    if (size < n - 1) continue;
    for (int64_t start = 0; start + n <= size; ++start) {
      // Does tokens[start, start+n-1) equal the last n-1 tokens? Then tokens[start+n-1] is banned.
      if (std::equal(tokens.begin() + start, tokens.begin() + start + n - 1, tokens.end() - (n - 1))) {
        const int64_t token = tokens[start + n - 1];
        const int64_t column = rows.columns != nullptr ? rows.columns->column(static_cast<int64_t>(row), token) : token;
        if (column < 0) continue;  // outside the row's shortlist: never produced anyway
        banned_rows.push_back(static_cast<int64_t>(row));
        banned_tokens.push_back(column);
      }
    }
  }
}

}  // namespace

void SpecialTokensMask::apply(torch::Tensor& log_probs, const RowFacts& /*rows*/) const {
  log_probs.select(1, kPadId).fill_(kNegInf);
  log_probs.select(1, kBosId).fill_(kNegInf);
}

void UnkPenalty::apply(torch::Tensor& log_probs, const RowFacts& /*rows*/) const {
  log_probs.select(1, kUnkId).sub_(penalty_);
}

namespace {

/// [N] bool on `device`: the rows that must end now, or none when no row must.
std::optional<torch::Tensor> forced_rows(const RowFacts& rows, const torch::Device& device) {
  if (std::none_of(rows.force_eos.begin(), rows.force_eos.end(), [](uint8_t f) { return f != 0; })) {
    return std::nullopt;
  }
  return torch::tensor(std::vector<int64_t>(rows.force_eos.begin(), rows.force_eos.end())).to(device, torch::kBool);
}

}  // namespace

void MinLength::apply(torch::Tensor& log_probs, const RowFacts& rows) const {
  if (rows.step >= length_) return;
  auto eos = log_probs.select(1, kEosId);  // [N], a view
  if (!rows.steps.empty()) {               // rows at steps of their own: the short ones that are not at their maximum
    std::vector<uint8_t> short_rows(rows.steps.size());
    for (size_t n = 0; n < short_rows.size(); ++n) {
      short_rows[n] = rows.steps[n] < length_ && (rows.force_eos.empty() || rows.force_eos[n] == 0) ? 1 : 0;
    }
    eos.masked_fill_(
        torch::tensor(std::vector<int64_t>(short_rows.begin(), short_rows.end())).to(log_probs.device(), torch::kBool),
        kNegInf);
    return;
  }
  // A row at its maximum length ends all the same: the maximum wins.
  if (const auto forced = forced_rows(rows, log_probs.device())) {
    eos.masked_fill_(forced->logical_not(), kNegInf);
  } else {
    eos.fill_(kNegInf);
  }
}

void MaxLength::apply(torch::Tensor& log_probs, const RowFacts& rows) const {
  const auto forced = forced_rows(rows, log_probs.device());
  if (!forced) return;
  const auto eos = log_probs.select(1, kEosId).clone();  // [N]
  log_probs.masked_fill_(forced->unsqueeze(1), kNegInf);
  log_probs.select(1, kEosId).copy_(eos);
}

void NoRepeatNgram::apply(torch::Tensor& log_probs, const RowFacts& rows) const {
  std::vector<int64_t> banned_rows, banned_tokens;
  banned_repeats(rows, n_, banned_rows, banned_tokens);
  if (banned_rows.empty()) return;
  const auto device = log_probs.device();
  log_probs.index_put_({torch::tensor(banned_rows).to(device), torch::tensor(banned_tokens).to(device)}, kNegInf);
}

LogitsProcessors::LogitsProcessors(const SearchOptions& options) {
  processors_.push_back(std::make_unique<SpecialTokensMask>());
  if (options.unk_penalty != 0.0) processors_.push_back(std::make_unique<UnkPenalty>(options.unk_penalty));
  only_lower_ = options.unk_penalty >= 0.0;  // a negative penalty raises unk
  if (options.min_len > 0) processors_.push_back(std::make_unique<MinLength>(options.min_len));
  processors_.push_back(std::make_unique<MaxLength>());
  if (options.no_repeat_ngram > 0) processors_.push_back(std::make_unique<NoRepeatNgram>(options.no_repeat_ngram));
}

void LogitsProcessors::apply(torch::Tensor& log_probs, const RowFacts& rows) const {
  for (const auto& processor : processors_) processor->apply(log_probs, rows);
}

}  // namespace tfm
