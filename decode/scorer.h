#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include <torch/types.h>

#include "decode/token_columns.h"
#include "model/decoder_state.h"
#include "model/shortlist.h"
#include "model/transformer.h"

namespace tfm {

/// A step's scores in a form that need not be written out: log-probabilities
/// values[n][c] + row_offsets[n]. values: [N, V'] float32 or bfloat16; row_offsets: [N] float32,
/// or undefined when values are the log-probabilities themselves. block_maxima, where known:
/// [N, ceil(V' / kLogitBlock)] float32, the largest value of each block of kLogitBlock columns
/// (model/log_normalizer.h), which lets a top-k skip blocks.
struct StepScores {
  torch::Tensor values;
  torch::Tensor row_offsets;
  torch::Tensor block_maxima;
};

/// One step's scores, handed out a block of rows at a time (Scorer::step_blocks).
class StepBlocks {
 public:
  virtual ~StepBlocks() = default;
  /// Rows first .. first+count-1 of what step_scores() returns for the step. Blocks are asked for in
  /// order, each once; the state must not change meanwhile.
  virtual StepScores rows(int64_t first, int64_t count) = 0;
};

/// The one interface search sees (Marian's startState/step): encode a batch once, then score
/// the next token for every row, one step at a time. Rows start as the batch's sentences;
/// search repeats, reorders and drops rows through State::reorder.
class Scorer {
 public:
  /// Whatever a scorer carries between steps.
  class State {
   public:
    virtual ~State() = default;
    /// Keeps rows `rows` ([N'] int64 indices into the current rows, repeats allowed), in order.
    /// `same_source`: each new row translates the same sentence as the row it comes from, and
    /// row i of the result belongs to the same sentence as row i before (see DecoderState).
    virtual void reorder(const torch::Tensor& rows, bool same_source = false) = 0;
    /// Each of the `rows` rows becomes `times` consecutive rows (beam search's K hypotheses per
    /// sentence). Afterwards, reorders that drop sentences keep each sentence's rows as one block.
    virtual void repeat_rows(int64_t rows, int64_t times) {
      reorder(torch::arange(rows, torch::kLong).repeat_interleave(times));
    }
    /// Continuous batching: the rows of `other` (a state the same scorer started, repeated
    /// alike, not stepped yet) join after this state's rows, each scored as if decoded alone.
    /// Only where Scorer::joins(); std::logic_error elsewhere.
    virtual void append(State& other);
    /// The token of each column of step()'s result, row by row (each sentence's shortlist, or the
    /// whole vocabulary), until the next reorder.
    virtual TokenColumns columns() const { return {}; }
  };

  virtual ~Scorer() = default;
  /// source: [B, S] token ids (eos-terminated, pad-filled) -> state with B rows
  virtual std::unique_ptr<State> start(const torch::Tensor& source) = 0;
  /// last_tokens: [N] token ids -> log-probabilities of the next token, [N, V'] float32, one
  /// column per token of state.columns() (V' = V without a shortlist)
  virtual torch::Tensor step(const torch::Tensor& last_tokens, State& state) = 0;
  /// step()'s log-probabilities as StepScores, for search that only reads them (beam search's
  /// top-k). Anything that changes values cell by cell (masking a token, a penalty) changes the
  /// log-probabilities alike, since the offsets are per row.
  virtual StepScores step_scores(const torch::Tensor& last_tokens, State& state) {
    return {step(last_tokens, state), {}, {}};
  }
  /// step_scores() in blocks of rows, for search that reads each sentence's rows on their own
  /// (beam search's top-k): the step runs now, each block's scores when asked for, so that no
  /// [N, V'] tensor need be live at once. By default step_scores() at once, handed out in views.
  virtual std::unique_ptr<StepBlocks> step_blocks(const torch::Tensor& last_tokens, State& state);
  /// How many rows a block of step_blocks() should have at most to save memory; 0: blocks save
  /// nothing (the default, whose blocks are views of one result), so ask for all rows at once.
  virtual int64_t block_rows(const State& /*state*/) const { return 0; }
  virtual int64_t vocab_size() const = 0;
  /// Whether its states can append() others.
  virtual bool joins() const { return false; }
};

/// One Transformer, decoded incrementally with its key/value cache; with a shortlist, each
/// sentence is scored over its own candidates only (model/shortlist.h).
class TransformerScorer : public Scorer {
 public:
  explicit TransformerScorer(Transformer model, const Shortlist* shortlist = nullptr);
  std::unique_ptr<State> start(const torch::Tensor& source) override;
  torch::Tensor step(const torch::Tensor& last_tokens, State& state) override;
  /// On the CPU, the logits as they are (bfloat16 or float32) with the log-softmax's normalizers
  /// as offsets (model/log_normalizer.h): no [N, V] float32 copy, nor a log-softmax pass over it,
  /// at every step. Elsewhere step()'s log-probabilities.
  StepScores step_scores(const torch::Tensor& last_tokens, State& state) override;
  /// On the CPU without a shortlist, each block's logits are computed when it is asked for: at a
  /// batch's first steps [N, V] float32 logits were the largest tensor a step held.
  std::unique_ptr<StepBlocks> step_blocks(const torch::Tensor& last_tokens, State& state) override;
  int64_t block_rows(const State& state) const override;
  int64_t vocab_size() const override;
  bool joins() const override { return true; }

 private:
  Transformer model_;
  const Shortlist* shortlist_;  // not owned; null: the whole vocabulary
  torch::Tensor shared_ids_;    // the shortlist's shared_targets: undefined without one
};

/// Several models over one vocabulary; the next-token score is the mean of their
/// log-probabilities (a log-linear ensemble, as Marian combines scorers). Members with a
/// shortlist must share it (the same columns for every member).
class EnsembleScorer : public Scorer {
 public:
  explicit EnsembleScorer(std::vector<std::unique_ptr<Scorer>> members);
  std::unique_ptr<State> start(const torch::Tensor& source) override;
  torch::Tensor step(const torch::Tensor& last_tokens, State& state) override;
  int64_t vocab_size() const override;
  bool joins() const override;

 private:
  std::vector<std::unique_ptr<Scorer>> members_;
};

}  // namespace tfm
