#include "decode/beam_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include <torch/torch.h>

#include "decode/beam_top_k.h"
#include "decode/logits_processors.h"
#include "runtime/parallel_jobs.h"
#include "text/special_ids.h"

namespace tfm {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

struct Beam {
  std::vector<int64_t> tokens;  // generated so far, without bos
  double log_prob = kNegInf;    // -inf marks an empty slot
};

/// One sentence's search: K live beams (rows of the scorer's state) and its finished hypotheses.
struct SentenceSearch {
  int64_t tag = 0;        // the caller's name for it (beam_search(): its row in the batch)
  int64_t max_len = 0;    // output tokens allowed, eos included
  int64_t generated = 0;  // steps taken (tokens chosen, eos included)
  std::vector<Beam> beams;
  std::vector<Hypothesis> finished;  // best first, at most K
};

/// Per-row facts for the step rules, for sentences [first, first + count) of `active`: a block of
/// rows of its own, rows a*R..a*R+R-1 sentence first+a's beams (R = `rows`: K, or 1 at a batch's
/// first step).
RowFacts row_facts(const std::vector<SentenceSearch>& active, size_t first, size_t count, int64_t rows,
                   const TokenColumns& columns) {
  RowFacts facts;
  const auto begin = active.begin() + static_cast<std::ptrdiff_t>(first);
  const auto end = begin + static_cast<std::ptrdiff_t>(count);
  facts.step = begin->generated;
  facts.columns = &columns;
  bool same_step = true;
  for (auto sentence = begin; sentence != end; ++sentence) {
    const uint8_t at_max = sentence->generated + 1 >= sentence->max_len ? 1 : 0;
    facts.step = std::min(facts.step, sentence->generated);
    same_step = same_step && sentence->generated == begin->generated;
    for (int64_t k = 0; k < rows; ++k) {
      facts.force_eos.push_back(at_max);
      facts.history.push_back(&sentence->beams[k].tokens);
    }
  }
  if (!same_step) {
    for (auto sentence = begin; sentence != end; ++sentence)
      facts.steps.insert(facts.steps.end(), rows, sentence->generated);
  }
  return facts;
}

void add_finished(SentenceSearch& sentence, std::vector<int64_t> tokens, double log_prob, int64_t beam, double alpha) {
  Hypothesis hypothesis = make_hypothesis(std::move(tokens), log_prob, alpha);
  auto& finished = sentence.finished;
  finished.insert(std::upper_bound(finished.begin(), finished.end(), hypothesis,
                                   [](const Hypothesis& x, const Hypothesis& y) { return x.score > y.score; }),
                  std::move(hypothesis));
  if (static_cast<int64_t>(finished.size()) > beam) finished.pop_back();
}

/// Whether no live beam can still reach the n-best: log-probabilities only fall, so a live beam's
/// best possible score is its log-probability over the largest length penalty still reachable.
bool is_done(const SentenceSearch& sentence, int64_t generated, const SearchOptions& options) {
  double best_live = kNegInf;
  for (const auto& beam : sentence.beams) best_live = std::max(best_live, beam.log_prob);
  if (best_live == kNegInf || generated >= sentence.max_len) return true;
  if (static_cast<int64_t>(sentence.finished.size()) < options.nbest) return false;
  if (options.early_stop && static_cast<int64_t>(sentence.finished.size()) >= options.beam) return true;
  // The penalty is monotonic in the length (rising for alpha > 0, falling below 0), so its largest
  // value over the lengths still reachable is at one end: O(1) however long the maximum.
  const double largest_penalty = std::max(length_penalty(generated + 1, options.length_penalty),
                                          length_penalty(sentence.max_len, options.length_penalty));
  return sentence.finished[options.nbest - 1].score >= best_live / largest_penalty;
}

/// From the sentence's top 2K candidates (beam index * V' + column, best first): eos candidates
/// ranked within the top K finish (as in fairseq, so beam 1 is greedy); the first K others
/// become the next beams. `first_row`: the sentence's first row among the step's scores. Returns,
/// per new beam, the row it extends.
std::vector<int64_t> select_next(SentenceSearch& sentence, const float* scores, const int64_t* ids,
                                 const TokenColumns& columns, int64_t first_row, int64_t width, int64_t beam,
                                 double alpha, std::vector<int64_t>& next_tokens) {
  std::vector<Beam> next;
  std::vector<int64_t> parents;
  for (int64_t rank = 0; rank < 2 * beam && static_cast<int64_t>(next.size()) < beam; ++rank) {
    const double score = scores[rank];
    if (score == kNegInf) break;
    const int64_t parent = ids[rank] / width;
    const int64_t token = columns.token(first_row + parent, ids[rank] % width);
    if (token == kEosId) {
      if (rank < beam) add_finished(sentence, sentence.beams[parent].tokens, score, beam, alpha);
      continue;
    }
    Beam extended{sentence.beams[parent].tokens, score};
    extended.tokens.push_back(token);
    next.push_back(std::move(extended));
    parents.push_back(parent);
    next_tokens.push_back(token);
  }
  while (static_cast<int64_t>(next.size()) < beam) {  // empty slots keep the row count at K
    next.emplace_back();
    parents.push_back(0);
    next_tokens.push_back(kEosId);
  }
  sentence.beams = std::move(next);
  return parents;
}

std::vector<Hypothesis> best_of(SentenceSearch& sentence, int64_t nbest) {
  auto& finished = sentence.finished;
  if (static_cast<int64_t>(finished.size()) > nbest) finished.resize(nbest);
  return std::move(finished);
}

}  // namespace

struct BeamSearchStream::Search {
  Scorer& scorer;
  SearchOptions options;
  LogitsProcessors processors;
  std::unique_ptr<Scorer::State> state;  // rows a*K..a*K+K-1: active[a]'s beams
  std::vector<SentenceSearch> active;
  std::vector<int64_t> last_tokens;  // [N]
  std::vector<float> beam_scores;    // [N]: each row's log-probability so far (-inf: an empty slot)
  torch::Device device = torch::kCPU;
  // Rows per sentence: 1 until a new batch's first step, K after. At the first step every beam
  // would extend the same <s> over the same source, so one row per sentence is scored and then
  // repeated, as CTranslate2 does: K - 1 rows of a full-width step are never computed.
  int64_t rows_per_sentence = 1;

  Search(Scorer& scorer, const SearchOptions& options) : scorer(scorer), options(options), processors(options) {}

  /// A new sentence's `rows` rows: <s> with log-probability 0 in the first, empty slots after.
  void start_rows(int64_t rows) {
    for (int64_t k = 0; k < rows; ++k) {
      last_tokens.push_back(kBosId);
      beam_scores.push_back(k == 0 ? 0.0F : -std::numeric_limits<float>::infinity());
    }
  }

  /// Sentences that have not taken their first step get their K rows.
  void expand_rows() {
    const int64_t beam = options.beam;
    if (rows_per_sentence == beam) return;
    state->repeat_rows(static_cast<int64_t>(active.size()), beam);
    rows_per_sentence = beam;
    last_tokens.clear();
    beam_scores.clear();
    for (size_t a = 0; a < active.size(); ++a) start_rows(beam);
  }
  /// Each active sentence's 2K best candidates, [A, 2K] scores and flat ids (beam_top_k), on the
  /// CPU; `scored` gets V'. Each sentence's candidates come from its own rows: the scores are read a
  /// block of sentences at a time where the scorer saves memory so (each block's top-k before the
  /// next block's scores), else all at once; blocks of about equal size, none of more than
  /// block_rows rows.
  std::pair<torch::Tensor, torch::Tensor> best_candidates(const TokenColumns& columns, int64_t& scored) {
    const int64_t beam = options.beam, rows = rows_per_sentence;
    const auto all_scores = torch::tensor(beam_scores, torch::kFloat32).to(device);  // [N]
    const auto sentences = static_cast<int64_t>(active.size());
    const int64_t block_rows = scorer.block_rows(*state);
    const int64_t blocks = block_rows > 0 ? std::max<int64_t>(1, (sentences * rows + block_rows - 1) / block_rows) : 1;
    const int64_t per_block = (sentences + blocks - 1) / blocks;  // sentences
    const auto step_blocks = scorer.step_blocks(torch::tensor(last_tokens, torch::kLong).to(device), *state);
    torch::Tensor scores, ids;
    for (int64_t first = 0; first < sentences; first += per_block) {
      const int64_t count = std::min(per_block, sentences - first);
      // log-probabilities values + row_offsets, [count * rows, V']
      auto [values, row_offsets, block_maxima] = step_blocks->rows(first * rows, count * rows);
      scored = values.size(1);
      processors.apply(values,
                       row_facts(active, static_cast<size_t>(first), static_cast<size_t>(count), rows, columns));
      const auto block_scores = all_scores.narrow(0, first * rows, count * rows);
      const auto offsets = row_offsets.defined() ? block_scores + row_offsets.to(block_scores.device()) : block_scores;
      auto top = beam_top_k(values, offsets, rows, std::min<int64_t>(2 * beam, rows * scored),
                            processors.only_lower() ? block_maxima : torch::Tensor());
      if (count == sentences) return top;
      if (!scores.defined()) {
        scores = torch::empty({sentences, top.first.size(1)}, top.first.options());
        ids = torch::empty({sentences, top.second.size(1)}, top.second.options());
      }
      scores.narrow(0, first, count).copy_(top.first);
      ids.narrow(0, first, count).copy_(top.second);
    }
    return {scores, ids};
  }
};

BeamSearchStream::BeamSearchStream(Scorer& scorer, const SearchOptions& options) {
  validate(options);
  search_ = std::make_unique<Search>(scorer, options);
}

BeamSearchStream::~BeamSearchStream() = default;

size_t BeamSearchStream::sentences() const { return search_->active.size(); }

void BeamSearchStream::add(const torch::Tensor& source, const std::vector<int64_t>& source_lengths,
                           const std::vector<int64_t>& tags) {
  Search& s = *search_;
  const int64_t batch = source.size(0), beam = s.options.beam;
  if (static_cast<int64_t>(source_lengths.size()) != batch || static_cast<int64_t>(tags.size()) != batch)
    throw std::invalid_argument("beam search: one length and one tag a row");
  if (batch == 0) return;
  if (!s.active.empty() && !s.scorer.joins())
    throw std::logic_error("beam search: this scorer cannot add sentences to a running batch");
  auto state = s.scorer.start(source);  // [B] rows
  if (s.active.empty()) {
    s.state = std::move(state);
    s.device = source.device();
    s.rows_per_sentence = 1;
  } else {
    s.expand_rows();                  // sentences added since the last step, if any, get their K rows first
    state->repeat_rows(batch, beam);  // [B*K] rows, sentence b's beams at b*K .. b*K+K-1
    s.state->append(*state);
  }
  for (int64_t b = 0; b < batch; ++b) {  // one live beam (and K - 1 empty slots once expanded)
    SentenceSearch sentence;
    sentence.tag = tags[b];
    sentence.max_len = max_output_length(source_lengths[b], s.options);
    sentence.beams.resize(beam);
    sentence.beams[0].log_prob = 0.0;
    s.active.push_back(std::move(sentence));
    s.start_rows(s.rows_per_sentence);
  }
}

std::vector<FinishedSentence> BeamSearchStream::step() {
  Search& s = *search_;
  std::vector<FinishedSentence> finished;
  if (s.active.empty()) return finished;
  const int64_t beam = s.options.beam, rows = s.rows_per_sentence;
  auto& state = *s.state;
  const auto columns = state.columns();
  int64_t scored = 0;                                                     // V'
  const auto [scores_cpu, ids_cpu] = s.best_candidates(columns, scored);  // [A, 2K]
  const int64_t width = scores_cpu.size(1);

  std::vector<SentenceSearch> still_active;
  std::vector<int64_t> keep_rows;
  s.last_tokens.clear();
  s.beam_scores.clear();
  for (size_t a = 0; a < s.active.size(); ++a) {
    auto& sentence = s.active[a];
    std::vector<int64_t> tokens;
    const auto parents =
        select_next(sentence, scores_cpu.data_ptr<float>() + a * width, ids_cpu.data_ptr<int64_t>() + a * width,
                    columns, static_cast<int64_t>(a) * rows, scored, beam, s.options.length_penalty, tokens);
    ++sentence.generated;
    if (is_done(sentence, sentence.generated, s.options)) {
      finished.push_back({sentence.tag, best_of(sentence, s.options.nbest)});
      continue;
    }
    for (int64_t k = 0; k < beam; ++k) {
      keep_rows.push_back(static_cast<int64_t>(a) * rows + parents[k]);
      s.last_tokens.push_back(tokens[k]);
      s.beam_scores.push_back(static_cast<float>(sentence.beams[k].log_prob));
    }
    still_active.push_back(std::move(sentence));
  }
  // While no sentence left the batch, every row stays within its sentence's block of K rows.
  const bool same_source = still_active.size() == s.active.size();
  s.active = std::move(still_active);
  if (s.active.empty()) {
    s.state.reset();  // the next sentences start a new batch
  } else if (rows < beam) {
    // Every new beam extends its sentence's one row: keep the rows of those still active, then
    // repeat each K times (the tokens and scores above are already K per sentence).
    if (!same_source) {
      std::vector<int64_t> kept;
      for (size_t i = 0; i < keep_rows.size(); i += static_cast<size_t>(beam)) kept.push_back(keep_rows[i]);
      state.reorder(torch::tensor(kept, torch::kLong).to(s.device), false);
    }
    state.repeat_rows(static_cast<int64_t>(s.active.size()), beam);
    s.rows_per_sentence = beam;
  } else {
    state.reorder(torch::tensor(keep_rows, torch::kLong).to(s.device), same_source);
  }
  return finished;
}

std::vector<std::vector<Hypothesis>> beam_search(Scorer& scorer, const torch::Tensor& source,
                                                 const std::vector<int64_t>& source_lengths,
                                                 const SearchOptions& options) {
  const int64_t batch = source.size(0);
  if (static_cast<int64_t>(source_lengths.size()) != batch)
    throw std::invalid_argument("beam_search: one length a row");
  BeamSearchStream stream(scorer, options);
  std::vector<int64_t> tags(batch);
  std::iota(tags.begin(), tags.end(), 0);
  stream.add(source, source_lengths, tags);
  std::vector<std::vector<Hypothesis>> results(batch);
  while (!stream.empty()) {
    adopt_idle_cores();  // the cores of batch workers that have run out of batches
    for (auto& sentence : stream.step()) results[sentence.tag] = std::move(sentence.nbest);
  }
  return results;
}

}  // namespace tfm
