#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "decode/search_options.h"
#include "serve/batching_queue.h"
#include "translation/translator.h"

namespace tfm {

/// One model the server answers with, and the language pair it is chosen by.
struct ServedModel {
  std::string source;  // language codes ("en"); "" for a model served without a pair
  std::string target;
  std::unique_ptr<Translator> translator;
  std::string name() const { return source.empty() ? std::string("default") : source + "-" + target; }
};

/// A lane in use: `id` names it to the BatchingQueue, and stays valid while any copy of `hold`
/// lives (the request that asked for it and its queued or decoding sentences: DecodeJob::keep).
struct LaneLease {
  size_t id = 0;
  std::shared_ptr<const void> hold;
};

/// The models of `tfm serve` and the lanes they are decoded in: a lane is a model with one set of
/// search settings (the server's own, or a request's beam, length penalty and n-best), since only
/// sentences decoded alike can share a batch. A model's default lane lasts as long as the server;
/// a request's own lane only while it is leased, so that clients sending ever new settings (any
/// length penalty in [0, 10]) do not grow the server. Lane ids are never reused.
class ServedModels {
 public:
  /// std::invalid_argument when `models` is empty, a pair is served twice, or a model without a
  /// pair is served beside others.
  explicit ServedModels(std::vector<ServedModel> models);

  /// The model for a request's pair; "auto" (LibreTranslate's detection) or an empty source picks the
  /// one model with that target. A model served without a pair answers every pair. nullopt = none.
  std::optional<size_t> find(const std::string& source, const std::string& target) const;
  const ServedModel& model(size_t index) const { return models_[index]; }
  size_t size() const { return models_.size(); }
  /// The search settings `model` decodes with unless a request says otherwise.
  const SearchOptions& defaults(size_t model) const;

  /// The lane of `model` decoding with `search`: the one leased already, else a new one.
  LaneLease lane(size_t model, const SearchOptions& search);
  /// Lanes held now: the defaults and those leased (/metrics' tfm_lanes).
  size_t lanes() const;
  /// Decodes a batch of one lane (BatchingQueue::Decode); decoding threads may call it at once.
  /// std::out_of_range for a lane no longer held.
  std::vector<SentenceResult> decode(size_t lane, std::vector<std::vector<int64_t>> sources,
                                     const std::vector<bool>& alignment);

  /// A running batch of `lane` that new sentences join between steps (BatchingQueue::OpenStream),
  /// or nullptr where the lane's search cannot run that way (IdTranslator::stream()).
  std::unique_ptr<DecodeStream> open_stream(size_t lane);

  /// GET /languages in LibreTranslate's shape: [{"code", "name", "targets"}].
  std::string languages_json() const;

 private:
  struct Lane {
    size_t id;
    size_t model;
    SearchOptions search;
    std::weak_ptr<const void> users;  // expired: no request or sentence holds the lane any more
  };
  Lane lane_at(size_t lane) const;

  std::vector<ServedModel> models_;
  mutable std::mutex lanes_mutex_;
  std::vector<Lane> lanes_;                                 // held ones only (lane() drops the others)
  std::vector<std::shared_ptr<const void>> defaults_held_;  // keeps each model's default lane
  size_t next_lane_ = 0;
};

/// The English name of a language code ("de" -> "German"); the code itself when not known.
std::string language_name(const std::string& code);

}  // namespace tfm
