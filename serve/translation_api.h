#pragma once
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "serve/api_requests.h"
#include "serve/batching_queue.h"
#include "serve/served_models.h"
#include "serve/server_metrics.h"

namespace tfm {

/// What a request may ask of the server.
struct ApiLimits {
  int64_t max_sentences_per_request = 100;
  int64_t max_beam = 16;  // for a request's beam and n-best (POST /v1/translate, `alternatives`)
  std::chrono::milliseconds request_timeout{30000};
  std::vector<std::string> api_keys;  // empty: no key needed
};

/// The translation endpoints without the HTTP around them: parse a request, check its key and
/// limits, tokenize its sentences, queue them for batching, wait for them and answer in JSON.
/// Every refusal is an ApiError with its status.
class TranslationApi {
 public:
  TranslationApi(ServedModels& models, BatchingQueue& queue, ServerMetrics& metrics, ApiLimits limits);

  /// POST /translate (LibreTranslate): {"translatedText": ...}. `header_key` is the key sent in a
  /// header (Authorization: Bearer, X-API-Key); `sentences` is set to the count translated.
  std::string translate_libre(const RequestBody& request, const std::string& header_key,
                              std::chrono::steady_clock::time_point arrived, int64_t& sentences);
  /// POST /v1/translate: {"model", "translations": [{"translation", "score", "tokens", ...}]}.
  std::string translate_v1(const RequestBody& request, const std::string& header_key,
                           std::chrono::steady_clock::time_point arrived, int64_t& sentences);

 private:
  struct Decoded {
    Translation translation;
    std::vector<int64_t> alignment;
  };
  void check_key(const std::string& body_key, const std::string& header_key) const;
  /// Checks the key (403), finds the pair's model (400) and checks the sentence count (413).
  size_t admit(const std::string& body_key, const std::string& header_key, const std::string& source,
               const std::string& target, size_t sentences) const;
  /// Queues `sentences` in `lane`, ends `arrival` once they are queued, waits for them (504 after
  /// the request timeout) and detokenizes.
  std::vector<Decoded> run(size_t model, const LaneLease& lane, const std::vector<std::string>& sentences,
                           bool alignment, std::chrono::steady_clock::time_point arrived,
                           std::optional<BatchingQueue::Arrival>& arrival);

  ServedModels& models_;
  BatchingQueue& queue_;
  ServerMetrics& metrics_;
  ApiLimits limits_;
};

}  // namespace tfm
