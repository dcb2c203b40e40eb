#include "decode/id_translator.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "decode/inference_model.h"
#include "decode/scorer.h"
#include "decode/search_strategy.h"
#include "model/small_rows_product.h"
#include "runtime/errors.h"
#include "runtime/parallel_jobs.h"
#include "runtime/step_team.h"
#include "text/option_names.h"
#include "text/special_ids.h"

namespace tfm {
namespace {

std::unique_ptr<Scorer> make_scorer(const std::vector<Transformer>& models, const Shortlist& shortlist) {
  const Shortlist* restrict = shortlist.empty() ? nullptr : &shortlist;
  if (models.size() == 1) return std::make_unique<TransformerScorer>(models.front(), restrict);
  std::vector<std::unique_ptr<Scorer>> members;
  for (const auto& model : models) members.push_back(std::make_unique<TransformerScorer>(model, restrict));
  return std::make_unique<EnsembleScorer>(std::move(members));
}

/// Groups row indices (already sorted longest first) so each batch's padded size
/// (sentences x longest source + eos) stays within max_tokens, and its count within batch_size.
std::vector<std::vector<size_t>> group_rows(const std::vector<size_t>& order,
                                            const std::vector<std::vector<int64_t>>& sources,
                                            const TranslatorOptions& options) {
  std::vector<std::vector<size_t>> batches;
  std::vector<size_t> current;
  int64_t longest = 0;
  for (const size_t row : order) {
    const int64_t length = static_cast<int64_t>(sources[row].size()) + 1;
    const int64_t padded = std::max(longest, length) * static_cast<int64_t>(current.size() + 1);
    const bool full = options.batch_size > 0 && static_cast<int64_t>(current.size()) >= options.batch_size;
    if (!current.empty() && (padded > options.max_tokens || full)) {
      batches.push_back(std::move(current));
      current.clear();
      longest = 0;
    }
    current.push_back(row);
    longest = std::max(longest, length);
  }
  if (!current.empty()) batches.push_back(std::move(current));
  return batches;
}

/// Sets translation.at_max_length from its best hypothesis and source (source_ids filled).
void flag_max_length(IdTranslation& translation, const SearchOptions& options) {
  translation.at_max_length =
      !translation.nbest.empty() && reaches_max_length(translation.nbest.front().tokens.size(),
                                                       static_cast<int64_t>(translation.source_ids.size()), options);
}

/// sources[rows[b]] as one eos-terminated, pad-filled batch [B, S] on the CPU; `lengths` gets
/// their subword counts.
torch::Tensor padded_batch(const std::vector<std::vector<int64_t>>& sources, const std::vector<size_t>& rows,
                           std::vector<int64_t>& lengths) {
  const auto batch = static_cast<int64_t>(rows.size());
  int64_t longest = 0;
  for (const size_t row : rows) longest = std::max<int64_t>(longest, static_cast<int64_t>(sources[row].size()) + 1);
  auto source = torch::full({batch, longest}, kPadId, torch::kLong);  // [B, S]
  auto* data = source.data_ptr<int64_t>();
  for (int64_t b = 0; b < batch; ++b) {
    const auto& ids = sources[rows[b]];
    std::copy(ids.begin(), ids.end(), data + b * longest);
    data[b * longest + static_cast<int64_t>(ids.size())] = kEosId;
    lengths.push_back(static_cast<int64_t>(ids.size()));
  }
  return source;
}

/// Evaluation mode (no dropout) while translating; the modes found are restored afterwards. A
/// model already in evaluation mode is only read, so that threads may translate with it at once.
class EvalModeGuard {
 public:
  explicit EvalModeGuard(std::vector<Transformer>& models) : models_(models) {
    for (auto& model : models_) {
      was_training_.push_back(model->is_training());
      if (was_training_.back()) model->eval();
    }
  }
  ~EvalModeGuard() {
    for (size_t i = 0; i < models_.size(); ++i) {
      if (was_training_[i]) models_[i]->train(true);
    }
  }
  EvalModeGuard(const EvalModeGuard&) = delete;
  EvalModeGuard& operator=(const EvalModeGuard&) = delete;

 private:
  std::vector<Transformer>& models_;
  std::vector<bool> was_training_;
};

}  // namespace

void validate(const TranslatorOptions& options) {
  validate(options.search);
  if (options.max_tokens < 1) throw std::invalid_argument(option_name("max_tokens") + " must be >= 1");
  if (options.batch_size < 0) throw std::invalid_argument(option_name("batch_size") + " must be >= 0");
  if (options.max_source_len < 1) throw std::invalid_argument(option_name("max_source_len") + " must be >= 1");
  if (options.workers < 1) throw std::invalid_argument(option_name("workers") + " must be >= 1");
  if (options.quantize_int8 && options.precision != Precision::kFloat32) {
    throw std::invalid_argument(option_name("quantize") + " int8 computes from float32 weights: use it with " +
                                option_name("dtype") + " float32");
  }
}

IdTranslator::IdTranslator(std::vector<Transformer> models, const TranslatorOptions& options,
                           const torch::Device& device, Shortlist shortlist)
    : models_(std::move(models)), shortlist_(std::move(shortlist)), options_(options), device_(device) {
  // A model from an int8 model file decodes in int8 whatever was asked (ready_for_inference
  // refuses another device or dtype); the rest of an ensemble is then quantized to match.
  for (const auto& model : models_) options_.quantize_int8 = options_.quantize_int8 || model->loaded_in_int8();
  validate(options_);
  check_supported(options_.precision, device_);
  if (models_.empty()) throw std::invalid_argument("no model to translate with");
  for (auto& model : models_) {
    if (model->config().vocab_size != models_.front()->config().vocab_size) {
      throw std::invalid_argument("ensemble members must share one vocabulary (" +
                                  std::to_string(model->config().vocab_size) +
                                  " != " + std::to_string(models_.front()->config().vocab_size) + ")");
    }
    // Inference converts weights outright: cheaper than autocast re-casting them at every step.
    model = ready_for_inference(model, device_, scalar_type(options_.precision), options_.quantize_int8,
                                !shortlist_.empty());
  }
  // Learned positions end at max_positions: a source of S subwords takes S + 1 (its eos), an
  // output of L tokens (eos included) L decoder positions. Past that the model cannot read on.
  source_limit_ = options_.max_source_len;
  for (const auto& model : models_) {
    const ModelConfig& config = model->config();
    if (config.positions == PositionEncoding::kLearned)
      source_limit_ = std::min(source_limit_, config.max_positions - 1);
  }
  if (source_limit_ < 1) throw std::invalid_argument("the model's learned positions leave no room for a source");
  options_.search = within_position_limit(options_.search);
  // A GPU takes one batch at a time: its kernels queue on one stream, and halved batches would
  // only leave it idle more.
  if (!device_.is_cpu()) options_.workers = 1;
  if (!shortlist_.empty()) {
    shortlist_.check_vocabulary(vocab_size());
    for (auto& model : models_) model->prepare_restricted_output();
  }
  search_ = make_search_strategy(options_.search);
}

SearchOptions IdTranslator::within_position_limit(SearchOptions search) const {
  for (const auto& model : models_) {
    const ModelConfig& config = model->config();
    if (config.positions != PositionEncoding::kLearned) continue;
    const int64_t limit = search.max_len_limit;
    search.max_len_limit = limit > 0 ? std::min(limit, config.max_positions) : config.max_positions;
  }
  return search;
}

int64_t IdTranslator::vocab_size() const { return models_.front()->config().vocab_size; }

int64_t IdTranslator::decoder_layers() const { return models_.front()->config().decoder_layers; }

std::vector<IdTranslation> IdTranslator::translate(std::vector<std::vector<int64_t>> sources) {
  return translate_with(std::move(sources), *search_, options_.search);
}

std::vector<IdTranslation> IdTranslator::translate(std::vector<std::vector<int64_t>> sources,
                                                   const SearchOptions& search) {
  const SearchOptions limited = within_position_limit(search);
  validate(limited);
  const auto strategy = make_search_strategy(limited);
  return translate_with(std::move(sources), *strategy, limited);
}

std::vector<IdTranslation> IdTranslator::translate_with(std::vector<std::vector<int64_t>> sources,
                                                        SearchStrategy& search, const SearchOptions& options) {
  torch::InferenceMode inference;
  const EvalModeGuard eval_mode(models_);
  std::vector<IdTranslation> out(sources.size());
  std::vector<size_t> order;
  for (size_t i = 0; i < sources.size(); ++i) {
    out[i].truncated = prepared(sources[i]).truncated;
    if (!sources[i].empty()) order.push_back(i);  // empty inputs translate to empty outputs
  }
  // Sorted by length, so that similar lengths share a batch; grouped from the longest, but the
  // batches of the shortest are translated first. They have the most rows, and so the largest
  // tensors at each step (the logits are rows x vocabulary); the longer batches' tensors then fit
  // in memory those freed. Longest batch first, each batch needed larger pieces than any freed
  // before, and jemalloc, which keeps freed pages (app/main.cpp), held them all (BENCHMARKS.md).
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return sources[a].size() > sources[b].size(); });
  const int64_t workers = workers_for(options);
  TranslatorOptions batching = options_;
  batching.max_tokens = std::max<int64_t>(1, options_.max_tokens / workers);
  auto batches = group_rows(order, sources, batching);
  std::reverse(batches.begin(), batches.end());
  // No more workers than batches or cores: a single batch (a line typed at a prompt) keeps them all.
  const int threads = at::get_num_threads();
  const auto teams = worker_teams(
      static_cast<int>(std::min<int64_t>({workers, static_cast<int64_t>(batches.size()), int64_t{threads}})), threads);
  if (teams.size() <= 1) {
    for (const auto& rows : batches) translate_batch(sources, rows, search, options.beam, out);
  } else {
    std::vector<std::unique_ptr<SearchStrategy>> own(teams.size());  // worker 0 uses `search`
    for (size_t w = 1; w < own.size(); ++w) own[w] = make_search_strategy(options);
    run_parallel_jobs(batches.size(), teams, [&](size_t batch, size_t worker) {
      translate_batch(sources, batches[batch], worker == 0 ? search : *own[worker], options.beam, out);
    });
  }
  for (size_t i = 0; i < sources.size(); ++i) {
    out[i].source_ids = std::move(sources[i]);
    flag_max_length(out[i], options);
  }
  return out;
}

IdTranslation IdTranslator::prepared(std::vector<int64_t>& source) const {
  IdTranslation translation;
  if (static_cast<int64_t>(source.size()) > source_limit_) {
    source.resize(static_cast<size_t>(source_limit_));
    translation.truncated = true;
  }
  return translation;
}

std::unique_ptr<IdTranslationStream> IdTranslator::stream(const SearchOptions& search) {
  const SearchOptions limited = within_position_limit(search);
  validate(limited);
  if (limited.sampling.enabled || (limited.beam == 1 && limited.nbest == 1)) return nullptr;
  for (const auto& model : models_) {
    // A stream is read by one thread while others may translate: the models must already be in
    // evaluation mode (the translator's own copies and a server's models are).
    if (model->is_training()) return nullptr;
  }
  return std::unique_ptr<IdTranslationStream>(new IdTranslationStream(*this, limited));
}

IdTranslationStream::IdTranslationStream(IdTranslator& translator, const SearchOptions& search)
    : translator_(translator),
      search_options_(search),
      scorer_(make_scorer(translator.models_, translator.shortlist_)) {
  search_ = std::make_unique<BeamSearchStream>(*scorer_, search);
}

IdTranslationStream::~IdTranslationStream() = default;

size_t IdTranslationStream::sentences() const { return in_flight_; }

void IdTranslationStream::add(std::vector<std::vector<int64_t>> sources, const std::vector<int64_t>& tags) {
  if (tags.size() != sources.size()) throw std::invalid_argument("IdTranslationStream::add: one tag a source");
  torch::InferenceMode inference;
  std::vector<size_t> rows;
  std::vector<int64_t> ids;
  for (size_t i = 0; i < sources.size(); ++i) {
    Pending pending{tags[i], translator_.prepared(sources[i])};
    const int64_t tokens = static_cast<int64_t>(sources[i].size()) + 1;
    pending.translation.source_ids = sources[i];
    int64_t id = static_cast<int64_t>(pending_.size());
    if (free_ids_.empty()) {
      pending_.push_back(std::move(pending));
    } else {
      id = free_ids_.back();
      free_ids_.pop_back();
      pending_[id] = std::move(pending);
    }
    ++in_flight_;
    source_tokens_ += tokens;
    if (sources[i].empty()) {
      empty_.push_back(id);  // an empty input translates to an empty output
    } else {
      rows.push_back(i);
      ids.push_back(id);
    }
  }
  if (rows.empty()) return;
  std::vector<int64_t> lengths;
  const auto source = padded_batch(sources, rows, lengths);
  translator_.at_rows(
      source.numel(), [&] { search_->add(source.to(translator_.device_), lengths, ids); }, &successors_);
}

std::vector<IdTranslationStream::Finished> IdTranslationStream::step() {
  torch::InferenceMode inference;
  std::vector<FinishedSentence> done;
  if (!search_->empty()) {
    translator_.at_rows(
        static_cast<int64_t>(search_->sentences()) * search_options_.beam, [&] { done = search_->step(); },
        &successors_);
  }
  for (const int64_t id : empty_) done.push_back({id, {}});
  empty_.clear();
  std::vector<Finished> out;
  for (auto& sentence : done) {
    Pending& pending = pending_[sentence.tag];
    if (!sentence.nbest.empty()) {
      translator_.target_tokens_.value += static_cast<int64_t>(sentence.nbest.front().tokens.size());
    }
    pending.translation.nbest = std::move(sentence.nbest);
    flag_max_length(pending.translation, search_options_);
    source_tokens_ -= static_cast<int64_t>(pending.translation.source_ids.size()) + 1;
    --in_flight_;
    out.push_back({pending.tag, std::move(pending.translation)});
    free_ids_.push_back(sentence.tag);
  }
  return out;
}

AttentionMaps IdTranslator::attention(const std::vector<int64_t>& source_ids,
                                      const std::vector<int64_t>& hypothesis_ids) {
  torch::InferenceMode inference;
  return probe_attention(models_.front(), source_ids, hypothesis_ids, device_);
}

bool IdTranslator::holds_step_team(int64_t rows) const {
  // Every parallel loop of such a search goes through team_parallel_for: the small-rows products
  // (float32, bfloat16) or the int8 ones, attention and the beam's. Above it oneDNN's products
  // would run on the calling thread alone inside the team's region.
  if (!options_.step_team || !device_.is_cpu() || rows > SmallRowsProduct::kMaxRows) return false;
  return options_.quantize_int8 || SmallRowsProduct::takes(scalar_type(options_.precision), rows);
}

void IdTranslator::at_rows(int64_t rows, const std::function<void()>& work, StepTeam::Successors* successors) const {
  if (holds_step_team(rows)) {
    StepTeam::hold(work, successors);
  } else {
    work();
  }
}

void IdTranslator::translate_batch(const std::vector<std::vector<int64_t>>& sources, const std::vector<size_t>& rows,
                                   SearchStrategy& search, int64_t beam, std::vector<IdTranslation>& out) {
  const auto batch = static_cast<int64_t>(rows.size());
  std::vector<int64_t> lengths;
  const auto source = padded_batch(sources, rows, lengths);  // [B, S]
  const int64_t longest = source.size(1);
  auto scorer = make_scorer(models_, shortlist_);
  const auto describe_batch = [&] {
    return "a batch of " + std::to_string(batch) + " sentences of up to " + std::to_string(longest) +
           " source positions (" + std::to_string(batch * longest) + " padded tokens, beam " + std::to_string(beam) +
           ")";
  };
  auto results = naming_batch_on_out_of_memory(describe_batch, [&] {
    std::vector<std::vector<Hypothesis>> found;
    at_rows(batch * std::max(beam, longest), [&] { found = search.search(*scorer, source.to(device_), lengths); });
    return found;
  });
  for (int64_t b = 0; b < batch; ++b) {
    if (!results[b].empty()) target_tokens_.value += static_cast<int64_t>(results[b].front().tokens.size());
    out[rows[b]].nbest = std::move(results[b]);
  }
}

}  // namespace tfm
