#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include <torch/types.h>

#include "decode/search_options.h"
#include "decode/token_columns.h"

namespace tfm {

/// What the processors know of each row (hypothesis) at one decoding step.
struct RowFacts {
  int64_t step = 0;                                  // tokens generated so far (the fewest of any row)
  std::vector<uint8_t> force_eos;                    // [N]: 1 where the hypothesis must end now (max length)
  std::vector<const std::vector<int64_t>*> history;  // [N]: its tokens so far (for n-gram blocking)
  const TokenColumns* columns = nullptr;             // the token of each row's columns; null: column = token id
  std::vector<int64_t> steps;  // [N]: each row's tokens so far, where rows differ (joined a running batch); else empty
};

/// One rule over the next-token log-probabilities (CTranslate2's LogitsProcessor): a few batched
/// tensor ops over all N rows. log_probs: [N, V'] (one column per token of RowFacts::columns; the
/// special ids always have their own columns), changed in place.
class LogitsProcessor {
 public:
  virtual ~LogitsProcessor() = default;
  virtual void apply(torch::Tensor& log_probs, const RowFacts& rows) const = 0;
};

/// Pad and bos are never produced.
class SpecialTokensMask : public LogitsProcessor {
 public:
  void apply(torch::Tensor& log_probs, const RowFacts& rows) const override;
};

/// Unk's log-probability lowered by a constant.
class UnkPenalty : public LogitsProcessor {
 public:
  explicit UnkPenalty(double penalty) : penalty_(penalty) {}
  void apply(torch::Tensor& log_probs, const RowFacts& rows) const override;

 private:
  double penalty_;
};

/// No eos before `length` tokens.
class MinLength : public LogitsProcessor {
 public:
  explicit MinLength(int64_t length) : length_(length) {}
  void apply(torch::Tensor& log_probs, const RowFacts& rows) const override;

 private:
  int64_t length_;
};

/// Only eos for the rows that reached their maximum length.
class MaxLength : public LogitsProcessor {
 public:
  void apply(torch::Tensor& log_probs, const RowFacts& rows) const override;
};

/// No token that would repeat an n-gram of the row's history.
class NoRepeatNgram : public LogitsProcessor {
 public:
  explicit NoRepeatNgram(int64_t n) : n_(n) {}
  void apply(torch::Tensor& log_probs, const RowFacts& rows) const override;

 private:
  int64_t n_;
};

/// The processors `options` asks for, applied in order (the later win: a row at its maximum
/// length ends even before the minimum length).
class LogitsProcessors {
 public:
  explicit LogitsProcessors(const SearchOptions& options);
  void apply(torch::Tensor& log_probs, const RowFacts& rows) const;
  /// Whether apply() never raises a cell (only masks or penalizes), so that bounds taken before
  /// it still hold after.
  bool only_lower() const { return only_lower_; }

 private:
  std::vector<std::unique_ptr<LogitsProcessor>> processors_;
  bool only_lower_ = true;
};

}  // namespace tfm
