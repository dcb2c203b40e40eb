// `tfm serve`'s request bodies (serve/api_requests.h) and the search each asks for
// (serve/request_search.h), as a client on the network may send them. The first byte picks the
// endpoint and the Content-Type; the rest is the body (a form: `&`-separated key=value pairs, as
// the HTTP library hands them over once decoded). Every refusal must be ApiError 400, and what is
// accepted must be a search the server can run within its limits.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_support.h"
#include "serve/api_requests.h"
#include "serve/request_search.h"

namespace {

constexpr int64_t kMaxBeam = 16;  // tfm serve's --max-beam default

std::multimap<std::string, std::string> form_fields(const std::string& body) {
  std::multimap<std::string, std::string> form;
  size_t start = 0;
  while (start <= body.size()) {
    size_t end = body.find('&', start);
    if (end == std::string::npos) end = body.size();
    const std::string pair = body.substr(start, end - start);
    const size_t equals = pair.find('=');
    form.emplace(pair.substr(0, equals), equals == std::string::npos ? "" : pair.substr(equals + 1));
    start = end + 1;
  }
  return form;
}

/// Error bodies and answers are JSON whatever bytes the client sent (dump_json never throws).
void require_json_text(const std::string& text) {
  const auto parsed = nlohmann::json::parse(tfm::dump_json(text), nullptr, /*allow_exceptions=*/false);
  tfm::fuzz::require(parsed.is_string(), "dump_json of a client's text is a JSON string");
}

void check_libre(const tfm::RequestBody& body) {
  const tfm::LibreRequest request = tfm::parse_libre_request(body);
  tfm::fuzz::require(request.q_is_array || request.q.size() == 1, "q as a string is one sentence");
  for (const auto& q : request.q) require_json_text(q);
  const tfm::SearchOptions defaults;
  const tfm::SearchOptions search = tfm::libre_search(request, defaults, kMaxBeam);
  tfm::fuzz::require(search.nbest >= 1 && search.nbest <= search.beam, "1 <= n-best <= beam");
  tfm::fuzz::require(search.beam <= std::max(kMaxBeam, defaults.beam), "the beam within --max-beam");
  tfm::fuzz::require(search.nbest == request.alternatives + 1 || request.alternatives == 0,
                     "alternatives are n-best entries beside the best");
}

void check_api(const tfm::RequestBody& body) {
  const tfm::ApiRequest request = tfm::parse_api_request(body);
  for (const auto& text : request.text) require_json_text(text);
  const tfm::SearchOptions search = tfm::api_search(request, tfm::SearchOptions{}, kMaxBeam);
  tfm::fuzz::require(search.beam >= 1 && search.beam <= kMaxBeam, "1 <= beam <= --max-beam");
  tfm::fuzz::require(search.nbest >= 1 && search.nbest <= search.beam, "1 <= n-best <= beam");
  tfm::fuzz::require(search.length_penalty >= 0.0 && search.length_penalty <= 10.0, "length penalty in [0, 10]");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const char* const kContentTypes[] = {"application/json", "", "application/x-www-form-urlencoded",
                                              "text/plain"};
  tfm::RequestBody body;
  body.content_type = kContentTypes[(data[0] >> 1) % 4];
  body.body.assign(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] >> 1) % 4 == 2) body.form = form_fields(body.body);
  try {
    if (data[0] & 1) {
      check_api(body);
    } else {
      check_libre(body);
    }
  } catch (const tfm::ApiError& error) {
    tfm::fuzz::require(error.status() == 400, "a malformed request is a 400");
    const auto parsed = nlohmann::json::parse(tfm::error_json(error.what()), nullptr, /*allow_exceptions=*/false);
    tfm::fuzz::require(parsed.is_object() && parsed["error"].is_string(), "the error body is {\"error\": text}");
  }
  return 0;
}
