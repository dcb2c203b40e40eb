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

/// The models of `tfm serve` and the lanes they are decoded in: a lane is a model with one set of
/// search settings (the server's own, or a request's beam, length penalty and n-best), since only
/// sentences decoded alike can share a batch.
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

  /// The lane of `model` decoding with `search` (created on first use).
  size_t lane(size_t model, const SearchOptions& search);
  /// Decodes a batch of one lane (BatchingQueue::Decode); decoding threads may call it at once.
  std::vector<SentenceResult> decode(size_t lane, std::vector<std::vector<int64_t>> sources,
                                     const std::vector<bool>& alignment);

  /// A running batch of `lane` that new sentences join between steps (BatchingQueue::OpenStream),
  /// or nullptr where the lane's search cannot run that way (IdTranslator::stream()).
  std::unique_ptr<DecodeStream> open_stream(size_t lane);

  /// GET /languages in LibreTranslate's shape: [{"code", "name", "targets"}].
  std::string languages_json() const;

 private:
  struct Lane {
    size_t model;
    SearchOptions search;
  };
  Lane lane_at(size_t lane) const;

  std::vector<ServedModel> models_;
  mutable std::mutex lanes_mutex_;
  std::vector<Lane> lanes_;
};

/// The English name of a language code ("de" -> "German"); the code itself when not known.
std::string language_name(const std::string& code);

}  // namespace tfm
