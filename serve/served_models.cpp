#include "serve/served_models.h"

#include <algorithm>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <utility>

#include "decode/attention_probe.h"

namespace tfm {
namespace {

bool same_search(const SearchOptions& a, const SearchOptions& b) {
  return a.beam == b.beam && a.nbest == b.nbest && a.length_penalty == b.length_penalty && a.max_len_a == b.max_len_a &&
         a.max_len_b == b.max_len_b && a.max_len_limit == b.max_len_limit && a.min_len == b.min_len &&
         a.unk_penalty == b.unk_penalty && a.no_repeat_ngram == b.no_repeat_ngram && a.early_stop == b.early_stop &&
         a.sampling.enabled == b.sampling.enabled && a.sampling.top_k == b.sampling.top_k &&
         a.sampling.top_p == b.sampling.top_p && a.sampling.temperature == b.sampling.temperature &&
         a.sampling.seed == b.sampling.seed;
}

// The cross-attention layer alignments come from: the last but one, as `tfm translate --alignment`.
constexpr int64_t kAlignmentLayer = -2;

}  // namespace

ServedModels::ServedModels(std::vector<ServedModel> models) : models_(std::move(models)) {
  if (models_.empty()) throw std::invalid_argument("no model to serve (--model)");
  std::set<std::string> names;
  for (const auto& served : models_) {
    if (served.source.empty() && models_.size() > 1) {
      throw std::invalid_argument(
          "--model without a language pair: with several models, name each pair "
          "(--model en-de=FILE)");
    }
    if (!names.insert(served.name()).second) {
      throw std::invalid_argument("--model: the pair " + served.name() + " is served twice");
    }
  }
  for (size_t m = 0; m < models_.size(); ++m) defaults_held_.push_back(lane(m, defaults(m)).hold);
}

std::optional<size_t> ServedModels::find(const std::string& source, const std::string& target) const {
  if (models_.size() == 1 && models_.front().source.empty()) return 0;
  std::optional<size_t> found;
  for (size_t m = 0; m < models_.size(); ++m) {
    if (models_[m].target != target) continue;
    if (models_[m].source == source) return m;
    if (source == "auto" || source.empty()) {
      if (found) return std::nullopt;  // two models translate into `target`: the source must be named
      found = m;
    }
  }
  return found;
}

const SearchOptions& ServedModels::defaults(size_t model) const {
  return models_[model].translator->ids().search_options();
}

LaneLease ServedModels::lane(size_t model, const SearchOptions& search) {
  std::lock_guard<std::mutex> lock(lanes_mutex_);
  lanes_.erase(std::remove_if(lanes_.begin(), lanes_.end(), [](const Lane& lane) { return lane.users.expired(); }),
               lanes_.end());
  for (const auto& held : lanes_) {
    if (held.model != model || !same_search(held.search, search)) continue;
    // Its last holder may let go between expired() above and here: then it is leased anew below.
    if (auto hold = held.users.lock()) return {held.id, std::move(hold)};
  }
  auto hold = std::make_shared<const int>(0);
  lanes_.push_back({next_lane_++, model, search, hold});
  return {lanes_.back().id, std::move(hold)};
}

size_t ServedModels::lanes() const {
  std::lock_guard<std::mutex> lock(lanes_mutex_);
  return static_cast<size_t>(
      std::count_if(lanes_.begin(), lanes_.end(), [](const Lane& lane) { return !lane.users.expired(); }));
}

ServedModels::Lane ServedModels::lane_at(size_t lane) const {
  std::lock_guard<std::mutex> lock(lanes_mutex_);
  for (const auto& held : lanes_) {
    if (held.id == lane && !held.users.expired()) return held;
  }
  throw std::out_of_range("lane " + std::to_string(lane) + " is no longer held");
}

std::vector<SentenceResult> ServedModels::decode(size_t lane, std::vector<std::vector<int64_t>> sources,
                                                 const std::vector<bool>& alignment) {
  const Lane chosen = lane_at(lane);
  IdTranslator& ids = models_[chosen.model].translator->ids();
  // A search strategy per batch, so that several decoding threads may share the translator (and a
  // sampled translation depends on its batch and seed, not on what the server decoded before).
  auto translated = ids.translate(std::move(sources), chosen.search);
  std::vector<SentenceResult> results(translated.size());
  for (size_t i = 0; i < translated.size(); ++i) {
    if (alignment[i] && !translated[i].nbest.empty()) {
      const auto& source = translated[i].source_ids;
      results[i].alignment = hard_alignment(ids.attention(source, translated[i].nbest.front().tokens), kAlignmentLayer);
    }
    results[i].translation = std::move(translated[i]);
  }
  return results;
}

namespace {

/// A lane's IdTranslationStream with the server's hard alignments, computed as a sentence ends.
class LaneStream : public DecodeStream {
 public:
  LaneStream(IdTranslator& translator, std::unique_ptr<IdTranslationStream> stream)
      : translator_(translator), stream_(std::move(stream)) {}
  void add(std::vector<std::vector<int64_t>> sources, const std::vector<bool>& alignment,
           const std::vector<int64_t>& tags) override {
    for (size_t i = 0; i < tags.size(); ++i) {
      if (alignment[i]) aligned_.insert(tags[i]);
    }
    stream_->add(std::move(sources), tags);
  }
  std::vector<Finished> step() override {
    std::vector<Finished> out;
    for (auto& finished : stream_->step()) {
      Finished sentence{finished.tag, {std::move(finished.translation), {}}};
      if (aligned_.erase(finished.tag) > 0 && !sentence.result.translation.nbest.empty()) {
        const auto& translation = sentence.result.translation;
        sentence.result.alignment = hard_alignment(
            translator_.attention(translation.source_ids, translation.nbest.front().tokens), kAlignmentLayer);
      }
      out.push_back(std::move(sentence));
    }
    return out;
  }
  size_t sentences() const override { return stream_->sentences(); }
  int64_t source_tokens() const override { return stream_->source_tokens(); }

 private:
  IdTranslator& translator_;
  std::unique_ptr<IdTranslationStream> stream_;
  std::set<int64_t> aligned_;  // tags of the sentences that want their alignment
};

}  // namespace

std::unique_ptr<DecodeStream> ServedModels::open_stream(size_t lane) {
  const Lane chosen = lane_at(lane);
  IdTranslator& ids = models_[chosen.model].translator->ids();
  auto stream = ids.stream(chosen.search);
  if (!stream) return nullptr;
  return std::make_unique<LaneStream>(ids, std::move(stream));
}

std::string ServedModels::languages_json() const {
  // Every language a pair names, with the targets it translates into (none for a target-only one),
  // as LibreTranslate lists them; a model served without a pair answers any: "auto".
  std::map<std::string, std::set<std::string>> targets;
  for (const auto& served : models_) {
    const std::string source = served.source.empty() ? "auto" : served.source;
    const std::string target = served.source.empty() ? "auto" : served.target;
    targets[source].insert(target);
    targets[target];
  }
  auto languages = nlohmann::json::array();
  for (const auto& [code, to] : targets) {
    languages.push_back({{"code", code}, {"name", language_name(code)}, {"targets", to}});
  }
  return languages.dump();
}

std::string language_name(const std::string& code) {
  static const std::map<std::string, std::string> names = {
      {"ar", "Arabic"},  {"auto", "Any"},    {"cs", "Czech"},     {"de", "German"},     {"en", "English"},
      {"es", "Spanish"}, {"et", "Estonian"}, {"fi", "Finnish"},   {"fr", "French"},     {"hi", "Hindi"},
      {"it", "Italian"}, {"ja", "Japanese"}, {"kk", "Kazakh"},    {"ko", "Korean"},     {"lt", "Lithuanian"},
      {"lv", "Latvian"}, {"nl", "Dutch"},    {"pl", "Polish"},    {"pt", "Portuguese"}, {"ro", "Romanian"},
      {"ru", "Russian"}, {"tr", "Turkish"},  {"uk", "Ukrainian"}, {"zh", "Chinese"}};
  const auto it = names.find(code);
  return it == names.end() ? code : it->second;
}

}  // namespace tfm
