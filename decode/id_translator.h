#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <torch/types.h>

#include "decode/attention_probe.h"
#include "decode/beam_search.h"
#include "decode/hypothesis.h"
#include "decode/search_strategy.h"
#include "model/shortlist.h"
#include "model/transformer.h"
#include "runtime/precision.h"
#include "runtime/step_team.h"

namespace tfm {

struct TranslatorOptions {
  SearchOptions search;
  int64_t max_tokens = 6000;      // padded source tokens per batch
  int64_t batch_size = 0;         // sentences per batch (0 = bounded by max_tokens only)
  int64_t max_source_len = 1024;  // longer inputs are truncated (and flagged)
  Precision precision = Precision::kFloat32;
  bool quantize_int8 = false;  // int8 linear layers (CPU, float32 weights): model/linear.h
  /// Batches decoded at once, each on its share of the calling thread's cores (runtime/
  /// parallel_jobs.h), with max_tokens shared among them: as many source tokens in flight as one
  /// batch would hold. Several one-core batches side by side keep the cores busy through the
  /// parts of a step that do not split across threads (BENCHMARKS.md). Sampling decodes one batch
  /// at a time: its draws go on from batch to batch. CPU only: on a GPU one batch at a time.
  int64_t workers = 1;
  /// Searches at a few rows on the CPU hold LibTorch's threads as one team from start to end,
  /// which read the next product's weight ahead while the calling thread's serial work leaves
  /// the memory idle (runtime/step_team.h). Off: every loop wakes LibTorch's pool as elsewhere.
  bool step_team = true;
};

void validate(const TranslatorOptions& options);

/// One sentence's translation, as ids.
struct IdTranslation {
  std::vector<Hypothesis> nbest;    // best first; empty for an empty source
  bool truncated = false;           // the source was longer than IdTranslator::source_limit()
  bool at_max_length = false;       // the best took all the search's maximum output length: maybe cut short
  std::vector<int64_t> source_ids;  // what the model read (after truncation; no </s>)
};

class IdTranslator;

/// Continuous batching over an IdTranslator (a server's decoding loop): add() sentences at any
/// time, step() advances every sentence in flight by one token and returns those that finished,
/// each translated as IdTranslator::translate() translates it. Beam search only
/// (IdTranslator::stream()). Not thread-safe; the translator must outlive it.
class IdTranslationStream {
 public:
  struct Finished {
    int64_t tag = 0;
    IdTranslation translation;
  };
  ~IdTranslationStream();
  IdTranslationStream(const IdTranslationStream&) = delete;
  IdTranslationStream& operator=(const IdTranslationStream&) = delete;

  /// Starts `sources` (subword ids without </s>) as one batch; tags[i] names sources[i] in step()'s results.
  void add(std::vector<std::vector<int64_t>> sources, const std::vector<int64_t>& tags);
  /// One decoding step for every sentence in flight; returns those that finished (empty sources
  /// finish at the first step after their add()).
  std::vector<Finished> step();
  /// Sentences added and not yet returned by step().
  size_t sentences() const;
  /// Their source subwords (with </s>): what a batch's max_tokens bounds.
  int64_t source_tokens() const { return source_tokens_; }

 private:
  friend class IdTranslator;
  struct Pending {
    int64_t tag;
    IdTranslation translation;  // truncated and source_ids filled in at add()
  };
  IdTranslationStream(IdTranslator& translator, const SearchOptions& search);
  IdTranslator& translator_;
  SearchOptions search_options_;  // what the stream decodes with (its beam sizes each step's rows)
  std::unique_ptr<Scorer> scorer_;
  std::unique_ptr<BeamSearchStream> search_;
  std::vector<Pending> pending_;   // by the id given to the search
  std::vector<int64_t> empty_;     // ids of empty sources, finished at the next step
  std::vector<int64_t> free_ids_;  // ids of finished sentences, for reuse
  size_t in_flight_ = 0;
  int64_t source_tokens_ = 0;
  // What the step teams learned of which product follows which: kept from step to step, so that
  // each step's team reads ahead from its first product on. The weights outlive the stream.
  StepTeam::Successors successors_;
};

/// Ids in, ids and scores out (CTranslate2's Translator over tokens; text stays a layer up, in
/// translation/): truncates each source to what the models can read, sorts by length, batches
/// by padded source tokens, runs the search strategy on one model or an ensemble, and returns
/// the results in the order given.
class IdTranslator {
 public:
  /// Models already on `device` in the precision asked for are used as they are; any other is
  /// moved, converted (bf16/fp16) and packed for the CPU's kernels (or as int8, with
  /// quantize_int8): in place where the translator holds the only reference (models moved in),
  /// else as a copy. So a model the caller still holds (the trainer's, validated during training)
  /// keeps its weights, dtype and device; translate() runs in evaluation mode and restores the
  /// mode it found.
  /// With a non-empty `shortlist`, every batch is scored over its candidates only
  /// (model/shortlist.h); std::invalid_argument when it does not cover the models' vocabulary.
  IdTranslator(std::vector<Transformer> models, const TranslatorOptions& options, const torch::Device& device,
               Shortlist shortlist = Shortlist());

  /// One IdTranslation per source (subword ids without </s>), in the order given.
  std::vector<IdTranslation> translate(std::vector<std::vector<int64_t>> sources);
  /// The same with other search settings for this call only (a server's per-request beam, length
  /// penalty or n-best): the batching, precision and models stay the translator's. Several threads
  /// may call this at once when the models are in evaluation mode (the translator's own copies
  /// are; a server's loaded models are put in it). std::invalid_argument for invalid settings.
  std::vector<IdTranslation> translate(std::vector<std::vector<int64_t>> sources, const SearchOptions& search);
  /// A stream of sentences decoded with `search` as one running batch that new sentences join
  /// (continuous batching); nullptr where the search cannot stream (sampling, greedy decoding:
  /// translate() batches those). std::invalid_argument for invalid settings.
  std::unique_ptr<IdTranslationStream> stream(const SearchOptions& search);
  /// The search settings translate() uses (after the models' position limits).
  const SearchOptions& search_options() const { return options_.search; }
  /// Batches translate() decodes at once, at most: TranslatorOptions::workers, or 1 where the
  /// device or the search takes one batch at a time (before capping by batches and cores).
  int64_t batch_workers() const { return workers_for(options_.search); }

  /// The first model's attention (an ensemble's members each have their own) over a source and
  /// one of its hypotheses (ids without </s>), as it computed them decoding.
  AttentionMaps attention(const std::vector<int64_t>& source_ids, const std::vector<int64_t>& hypothesis_ids);

  int64_t vocab_size() const;
  /// The first model's decoder layers: the cross-attention layers attention() returns.
  int64_t decoder_layers() const;
  /// The longest source read, in subwords: max_source_len, or less where a model with learned
  /// positions cannot place more. Longer sources are truncated to it and flagged.
  int64_t source_limit() const { return source_limit_; }
  int64_t target_tokens() const { return target_tokens_.value; }  // subwords produced so far (best hypotheses)
  /// Whether a search of at most `rows` rows (its encoder's padded tokens or its beams' rows)
  /// holds a StepTeam: with step_team on the CPU, where every loop of the search is the team's.
  bool holds_step_team(int64_t rows) const;

 private:
  friend class IdTranslationStream;
  /// Runs `work`, a search's part of at most `rows` rows, in a StepTeam where holds_step_team(rows)
  /// says so; `successors`: what earlier parts' teams learned (a running batch's, step by step).
  void at_rows(int64_t rows, const std::function<void()>& work, StepTeam::Successors* successors = nullptr) const;
  /// A sentence as the models read it: truncated to source_limit() (flagged), source_ids filled.
  IdTranslation prepared(std::vector<int64_t>& source) const;
  /// `search` is `options`' strategy; parallel batches make one each of their own from `options`.
  std::vector<IdTranslation> translate_with(std::vector<std::vector<int64_t>> sources, SearchStrategy& search,
                                            const SearchOptions& options);
  void translate_batch(const std::vector<std::vector<int64_t>>& sources, const std::vector<size_t>& rows,
                       SearchStrategy& search, int64_t beam, std::vector<IdTranslation>& out);
  /// Batches decoded at once with `search`: sampling's draws go on from batch to batch.
  int64_t workers_for(const SearchOptions& search) const { return search.sampling.enabled ? 1 : options_.workers; }
  /// `search` limited to the longest output the models can position.
  SearchOptions within_position_limit(SearchOptions search) const;

  std::vector<Transformer> models_;
  Shortlist shortlist_;
  TranslatorOptions options_;
  torch::Device device_;
  int64_t source_limit_ = 0;
  std::unique_ptr<SearchStrategy> search_;  // one for the translator's life: sampling's draws go on across batches
  /// A count several decoding threads add to; moves with the translator.
  struct Count {
    std::atomic<int64_t> value{0};
    Count() = default;
    Count(Count&& other) noexcept : value(other.value.load()) {}
    Count& operator=(Count&& other) noexcept {
      value = other.value.load();
      return *this;
    }
  };
  Count target_tokens_;
};

}  // namespace tfm
