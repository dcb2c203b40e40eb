#pragma once
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tfm {

/// A request the server refuses: the HTTP status and the message of its JSON error body.
class ApiError : public std::runtime_error {
 public:
  ApiError(int status, const std::string& message, int retry_after_seconds = 0)
      : std::runtime_error(message), status_(status), retry_after_(retry_after_seconds) {}
  int status() const { return status_; }
  int retry_after_seconds() const { return retry_after_; }  // 0: no Retry-After header

 private:
  int status_;
  int retry_after_;
};

/// A request body as it came: its Content-Type, its bytes, and the fields of a form body (and of
/// the query string) as the HTTP library parsed them.
struct RequestBody {
  std::string content_type;
  std::string body;
  std::multimap<std::string, std::string> form;
};

/// POST /translate, LibreTranslate's API: `q` a string or an array of strings.
struct LibreRequest {
  std::vector<std::string> q;
  bool q_is_array = false;
  std::string source;
  std::string target;
  int64_t alternatives = 0;  // alternative translations asked for beside the best
  std::string api_key;
};

/// POST /v1/translate, tfm's own: several sentences and per-request search settings.
struct ApiRequest {
  std::vector<std::string> text;
  std::string source;
  std::string target;
  std::optional<int64_t> beam;
  std::optional<double> length_penalty;
  std::optional<int64_t> nbest;
  bool alignment = false;
  std::string api_key;
};

/// Throw ApiError 400 naming what is wrong: malformed JSON or form, a missing or mistyped field,
/// a format other than "text". Invalid UTF-8 inside a JSON body is read as U+FFFD, which is what the
/// tokenizer makes of it in `tfm translate`.
LibreRequest parse_libre_request(const RequestBody& request);
ApiRequest parse_api_request(const RequestBody& request);

/// The JSON of an error body: {"error": message}.
std::string error_json(const std::string& message);
/// A JSON value as text for a response: never throws, invalid UTF-8 becomes U+FFFD.
std::string dump_json(const nlohmann::json& value);

}  // namespace tfm
