#include "serve/translation_api.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "decode/attention_probe.h"
#include "serve/request_search.h"

namespace tfm {

TranslationApi::TranslationApi(ServedModels& models, BatchingQueue& queue, ServerMetrics& metrics, ApiLimits limits)
    : models_(models), queue_(queue), metrics_(metrics), limits_(std::move(limits)) {}

namespace {

/// Whether a client's key is `known`, in a time that does not depend on where they first differ
/// (std::string's == stops there, which a client could time to guess a key byte by byte).
bool same_key(const std::string& sent, const std::string& known) {
  if (sent.size() != known.size()) return false;
  unsigned char differs = 0;
  for (size_t i = 0; i < sent.size(); ++i) differs |= static_cast<unsigned char>(sent[i] ^ known[i]);
  return differs == 0;
}

}  // namespace

void TranslationApi::check_key(const std::string& body_key, const std::string& header_key) const {
  if (limits_.api_keys.empty()) return;
  for (const auto& key : {body_key, header_key}) {
    if (key.empty()) continue;
    bool known = false;
    for (const auto& api_key : limits_.api_keys) known |= same_key(key, api_key);
    if (known) return;
  }
  throw ApiError(403, body_key.empty() && header_key.empty() ? "an API key is required (\"api_key\")"
                                                             : "the API key is not valid");
}

size_t TranslationApi::admit(const std::string& body_key, const std::string& header_key, const std::string& source,
                             const std::string& target, size_t sentences) const {
  check_key(body_key, header_key);
  const auto model = models_.find(source, target);
  if (!model) {
    throw ApiError(400, "no model for source \"" + source + "\" and target \"" + target + "\" (GET /languages)");
  }
  if (static_cast<int64_t>(sentences) > limits_.max_sentences_per_request) {
    throw ApiError(413, std::to_string(sentences) + " sentences in one request, more than the " +
                            std::to_string(limits_.max_sentences_per_request) + " this server takes");
  }
  return *model;
}

std::vector<TranslationApi::Decoded> TranslationApi::run(size_t model, const LaneLease& lane,
                                                         const std::vector<std::string>& sentences, bool alignment,
                                                         std::chrono::steady_clock::time_point arrived,
                                                         std::optional<BatchingQueue::Arrival>& arrival) {
  const auto deadline = arrived + limits_.request_timeout;
  auto timed_out = [&] {
    return ApiError(504, "not translated within the server's request timeout (" +
                             std::to_string(limits_.request_timeout.count()) + " ms)");
  };
  // A request already past its deadline (a timeout below a millisecond rounds to 0) is answered
  // without decoding it, whatever the worker's speed.
  if (std::chrono::steady_clock::now() >= deadline) throw timed_out();
  const Tokenizer& tokenizer = models_.model(model).translator->tokenizer();
  DecodeJob job{lane.id, {}, alignment, lane.hold};
  for (const auto& sentence : sentences) job.sources.push_back(tokenizer.encode(sentence));
  std::shared_ptr<PendingJob> pending;
  try {
    pending = queue_.submit(std::move(job), arrival ? &*arrival : nullptr);
  } catch (const QueueFull& full) {
    throw ApiError(503, std::string(full.what()) + "; try again shortly", 1);
  }
  arrival.reset();
  if (!pending->wait_until(deadline)) throw timed_out();
  if (pending->error()) std::rethrow_exception(pending->error());
  std::vector<Decoded> out;
  for (auto& result : pending->results()) {
    out.push_back({to_text(tokenizer, std::move(result.translation)), std::move(result.alignment)});
  }
  metrics_.sentences_translated(static_cast<int64_t>(out.size()));
  return out;
}

std::string TranslationApi::translate_libre(const RequestBody& request, const std::string& header_key,
                                            std::chrono::steady_clock::time_point arrived, int64_t& sentences) {
  std::optional<BatchingQueue::Arrival> arrival(std::in_place, queue_);
  const LibreRequest parsed = parse_libre_request(request);
  const size_t model = admit(parsed.api_key, header_key, parsed.source, parsed.target, parsed.q.size());
  const SearchOptions search = libre_search(parsed, models_.defaults(model), limits_.max_beam);
  auto decoded = run(model, models_.lane(model, search), parsed.q, false, arrived, arrival);
  sentences = static_cast<int64_t>(decoded.size());
  nlohmann::json texts = nlohmann::json::array();
  nlohmann::json alternatives = nlohmann::json::array();
  for (const auto& sentence : decoded) {
    texts.push_back(sentence.translation.text());
    nlohmann::json others = nlohmann::json::array();
    for (size_t c = 1; c < sentence.translation.nbest.size(); ++c) others.push_back(sentence.translation.nbest[c].text);
    alternatives.push_back(std::move(others));
  }
  nlohmann::json answer;
  answer["translatedText"] = parsed.q_is_array ? texts : texts.front();
  if (parsed.alternatives > 0) answer["alternatives"] = parsed.q_is_array ? alternatives : alternatives.front();
  return dump_json(answer);
}

std::string TranslationApi::translate_v1(const RequestBody& request, const std::string& header_key,
                                         std::chrono::steady_clock::time_point arrived, int64_t& sentences) {
  std::optional<BatchingQueue::Arrival> arrival(std::in_place, queue_);
  const ApiRequest parsed = parse_api_request(request);
  const size_t model = admit(parsed.api_key, header_key, parsed.source, parsed.target, parsed.text.size());
  const SearchOptions search = api_search(parsed, models_.defaults(model), limits_.max_beam);
  auto decoded = run(model, models_.lane(model, search), parsed.text, parsed.alignment, arrived, arrival);
  sentences = static_cast<int64_t>(decoded.size());
  nlohmann::json translations = nlohmann::json::array();
  for (const auto& sentence : decoded) {
    const Translation& t = sentence.translation;
    nlohmann::json record = {{"translation", t.text()}};
    if (!t.nbest.empty()) {
      record["score"] = t.nbest.front().score;
      record["tokens"] = t.nbest.front().pieces;
    }
    if (t.truncated) record["truncated"] = true;
    if (t.at_max_length) record["max_length_reached"] = true;
    if (parsed.alignment) record["alignment"] = pharaoh_alignment(sentence.alignment);
    if (search.nbest > 1) {
      record["nbest"] = nlohmann::json::array();
      for (const auto& c : t.nbest) {
        record["nbest"].push_back({{"translation", c.text}, {"score", c.score}, {"tokens", c.pieces}});
      }
    }
    translations.push_back(std::move(record));
  }
  return dump_json({{"model", models_.model(model).name()}, {"translations", std::move(translations)}});
}

}  // namespace tfm
