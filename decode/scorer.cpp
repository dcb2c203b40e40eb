#include "decode/scorer.h"

#include <algorithm>
#include <stdexcept>

#include <torch/torch.h>

#include "model/log_normalizer.h"

namespace tfm {
namespace {

class TransformerState : public Scorer::State {
 public:
  explicit TransformerState(DecoderState state) : state(std::move(state)) {}
  void reorder(const torch::Tensor& rows, bool same_source) override { state.reorder(rows, same_source); }
  void repeat_rows(int64_t /*rows*/, int64_t times) override { state.repeat_rows(times); }
  void append(Scorer::State& other) override { state.append(std::move(static_cast<TransformerState&>(other).state)); }
  TokenColumns columns() const override {
    if (!state.output_columns.defined()) return {};
    return {state.output_columns.candidates, state.rows_per_memory};
  }
  DecoderState state;
};

class EnsembleState : public Scorer::State {
 public:
  void reorder(const torch::Tensor& rows, bool same_source) override {
    for (auto& member : members) member->reorder(rows, same_source);
  }
  void repeat_rows(int64_t rows, int64_t times) override {
    for (auto& member : members) member->repeat_rows(rows, times);
  }
  void append(Scorer::State& other) override {
    auto& joining = static_cast<EnsembleState&>(other);
    for (size_t i = 0; i < members.size(); ++i) members[i]->append(*joining.members.at(i));
  }
  TokenColumns columns() const override { return members.front()->columns(); }
  std::vector<std::unique_ptr<Scorer::State>> members;
};

/// Rows per block of a step's output layer (TransformerScorer::block_rows): [256, V] float32 logits
/// at a time instead of [N, V] (N ~900 at a batch's first steps here), while each product still has
/// rows enough for oneDNN's large-batch kernel.
constexpr int64_t kStepBlockRows = 256;

/// The logits as StepScores: with the log-softmax's normalizers as offsets where the CPU computes
/// them, else the log-probabilities.
StepScores scores_of(const Transformer& model, const TransformerImpl::StepLogits& step_logits) {
  const auto& [logits, rest] = step_logits;
  if (log_normalizers_supported(logits) && !logits.requires_grad()) {
    auto [normalizers, block_maxima] = log_normalizers(logits);
    if (rest.defined()) normalizers = torch::logaddexp(normalizers, rest);
    return {logits, normalizers.neg_(), block_maxima};
  }
  return {model->log_probs(step_logits), {}, {}};
}

/// step_scores()'s result, handed out in narrowed views.
class WholeStepBlocks : public StepBlocks {
 public:
  explicit WholeStepBlocks(StepScores scores) : scores_(std::move(scores)) {}
  StepScores rows(int64_t first, int64_t count) override {
    auto rows_of = [&](const torch::Tensor& t) { return t.defined() ? t.narrow(0, first, count) : t; };
    return {rows_of(scores_.values), rows_of(scores_.row_offsets), rows_of(scores_.block_maxima)};
  }

 private:
  StepScores scores_;
};

/// The decoder's output for the step, and each block's output layer when asked for.
class TransformerStepBlocks : public StepBlocks {
 public:
  TransformerStepBlocks(Transformer model, const DecoderState& state, torch::Tensor hidden)
      : model_(std::move(model)), state_(state), hidden_(std::move(hidden)) {}
  StepScores rows(int64_t first, int64_t count) override {
    const auto rows = first == 0 && count == hidden_.size(0) ? hidden_ : hidden_.narrow(0, first, count);
    return scores_of(model_, model_->output_logits(rows, state_));
  }

 private:
  Transformer model_;
  const DecoderState& state_;
  torch::Tensor hidden_;  // [N, D]
};

}  // namespace

std::unique_ptr<StepBlocks> Scorer::step_blocks(const torch::Tensor& last_tokens, State& state) {
  return std::make_unique<WholeStepBlocks>(step_scores(last_tokens, state));
}

void Scorer::State::append(State& /*other*/) { throw std::logic_error("this scorer's states cannot join others"); }

TransformerScorer::TransformerScorer(Transformer model, const Shortlist* shortlist)
    : model_(std::move(model)), shortlist_(shortlist) {
  if (shortlist_ != nullptr) {
    shortlist_->check_vocabulary(model_->config().vocab_size);
    shared_ids_ = shortlist_->shared_targets(kSharedCandidates);
  }
}

std::unique_ptr<Scorer::State> TransformerScorer::start(const torch::Tensor& source) {
  auto state = std::make_unique<TransformerState>(model_->start_decoding(model_->encode(source)));
  if (shortlist_ != nullptr) {
    model_->restrict_output(state->state, shortlist_->candidates(source), shortlist_->rest_correction(),  // [B, C]
                            shared_ids_);
  }
  return state;
}

torch::Tensor TransformerScorer::step(const torch::Tensor& last_tokens, State& state) {
  return model_->step(last_tokens, static_cast<TransformerState&>(state).state);
}

StepScores TransformerScorer::step_scores(const torch::Tensor& last_tokens, State& state) {
  auto& decoder_state = static_cast<TransformerState&>(state).state;
  // [N, V], or [N, C] and the left-out tokens' stand-in under a shortlist: in the normalizer, not a choice.
  return scores_of(model_, model_->step_logits(last_tokens, decoder_state));
}

std::unique_ptr<StepBlocks> TransformerScorer::step_blocks(const torch::Tensor& last_tokens, State& state) {
  auto& decoder_state = static_cast<TransformerState&>(state).state;
  return std::make_unique<TransformerStepBlocks>(model_, decoder_state,
                                                 model_->step_hidden(last_tokens, decoder_state));
}

int64_t TransformerScorer::block_rows(const State& state) const {
  const auto& decoder_state = static_cast<const TransformerState&>(state).state;
  // A shortlist's [N, C] scores are small, and its lists belong to whole rows of the state.
  if (decoder_state.output_columns.defined() || !decoder_state.memory_bias.is_cpu()) return 0;
  return kStepBlockRows;
}

int64_t TransformerScorer::vocab_size() const { return model_->config().vocab_size; }

EnsembleScorer::EnsembleScorer(std::vector<std::unique_ptr<Scorer>> members) : members_(std::move(members)) {
  if (members_.empty()) throw std::invalid_argument("an ensemble needs at least one model");
  for (const auto& member : members_) {
    if (member->vocab_size() != members_.front()->vocab_size()) {
      throw std::invalid_argument("ensemble members have different vocabulary sizes (" +
                                  std::to_string(member->vocab_size()) + " vs " +
                                  std::to_string(members_.front()->vocab_size()) + ")");
    }
  }
}

std::unique_ptr<Scorer::State> EnsembleScorer::start(const torch::Tensor& source) {
  auto state = std::make_unique<EnsembleState>();
  for (auto& member : members_) state->members.push_back(member->start(source));
  return state;
}

torch::Tensor EnsembleScorer::step(const torch::Tensor& last_tokens, State& state) {
  auto& ensemble = static_cast<EnsembleState&>(state);
  torch::Tensor sum;
  for (size_t i = 0; i < members_.size(); ++i) {
    const auto log_probs = members_[i]->step(last_tokens, *ensemble.members[i]);  // [N, V]
    sum = sum.defined() ? sum + log_probs : log_probs;
  }
  return sum / static_cast<double>(members_.size());
}

int64_t EnsembleScorer::vocab_size() const { return members_.front()->vocab_size(); }

bool EnsembleScorer::joins() const {
  return std::all_of(members_.begin(), members_.end(), [](const auto& member) { return member->joins(); });
}

}  // namespace tfm
