#include "serve/api_requests.h"

#include <nlohmann/json.hpp>

#include "text/unicode_text.h"

namespace tfm {
namespace {

using nlohmann::json;

bool is_json(const RequestBody& request) {
  if (request.content_type.find("json") != std::string::npos) return true;
  // A client that sends no Content-Type: JSON if it looks like an object.
  return request.content_type.empty() && request.body.find_first_not_of(" \t\r\n") != std::string::npos &&
         request.body[request.body.find_first_not_of(" \t\r\n")] == '{';
}

bool is_form(const RequestBody& request) {
  return request.content_type.rfind("application/x-www-form-urlencoded", 0) == 0 ||
         request.content_type.rfind("multipart/form-data", 0) == 0;
}

json parse_object(const RequestBody& request) {
  json body = json::parse(replace_invalid_utf8(request.body), nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) throw ApiError(400, "the body is not valid JSON");
  if (!body.is_object()) throw ApiError(400, "the body must be a JSON object");
  return body;
}

std::string string_field(const json& body, const char* name) {
  const auto it = body.find(name);
  if (it == body.end() || it->is_null()) return "";
  if (!it->is_string()) throw ApiError(400, std::string("\"") + name + "\" must be a string");
  return it->get<std::string>();
}

/// A text field that may be one string or an array of strings; false when absent.
bool strings_field(const json& body, const char* name, std::vector<std::string>& out, bool& is_array) {
  const auto it = body.find(name);
  if (it == body.end() || it->is_null()) return false;
  is_array = it->is_array();
  if (it->is_string()) {
    out.push_back(it->get<std::string>());
    return true;
  }
  if (!it->is_array()) throw ApiError(400, std::string("\"") + name + "\" must be a string or an array of strings");
  for (const auto& item : *it) {
    if (!item.is_string()) throw ApiError(400, std::string("\"") + name + "\" must hold strings only");
    out.push_back(item.get<std::string>());
  }
  return true;
}

template <typename T>
std::optional<T> number_field(const json& body, const char* name) {
  const auto it = body.find(name);
  if (it == body.end() || it->is_null()) return std::nullopt;
  const bool integral = std::is_integral<T>::value;
  if (!it->is_number() || (integral && !it->is_number_integer())) {
    throw ApiError(400, std::string("\"") + name + "\" must be " + (integral ? "an integer" : "a number"));
  }
  return it->get<T>();
}

std::string form_field(const RequestBody& request, const char* name) {
  const auto it = request.form.find(name);
  return it == request.form.end() ? std::string() : it->second;
}

void check_format(const std::string& format) {
  if (!format.empty() && format != "text") {
    throw ApiError(400, "format \"" + format + "\" is not supported: send plain text (format \"text\")");
  }
}

LibreRequest libre_from_form(const RequestBody& request) {
  LibreRequest out;
  const auto [first, last] = request.form.equal_range("q");
  for (auto it = first; it != last; ++it) out.q.push_back(it->second);
  if (out.q.empty()) throw ApiError(400, "missing \"q\", the text to translate");
  out.q_is_array = out.q.size() > 1;
  out.source = form_field(request, "source");
  out.target = form_field(request, "target");
  out.api_key = form_field(request, "api_key");
  check_format(form_field(request, "format"));
  const std::string alternatives = form_field(request, "alternatives");
  if (!alternatives.empty()) {
    try {
      size_t used = 0;
      out.alternatives = std::stoll(alternatives, &used);
      if (used != alternatives.size()) throw std::invalid_argument(alternatives);
    } catch (const std::exception&) {
      throw ApiError(400, "\"alternatives\" must be an integer, not \"" + alternatives + "\"");
    }
  }
  return out;
}

}  // namespace

LibreRequest parse_libre_request(const RequestBody& request) {
  LibreRequest out;
  if (!is_json(request)) {
    if (!is_form(request)) {
      throw ApiError(400, "send JSON (Content-Type: application/json) or a form, not \"" + request.content_type + "\"");
    }
    out = libre_from_form(request);
  } else {
    const json body = parse_object(request);
    if (!strings_field(body, "q", out.q, out.q_is_array)) throw ApiError(400, "missing \"q\", the text to translate");
    out.source = string_field(body, "source");
    out.target = string_field(body, "target");
    out.api_key = string_field(body, "api_key");
    check_format(string_field(body, "format"));
    out.alternatives = number_field<int64_t>(body, "alternatives").value_or(0);
  }
  if (out.alternatives < 0) throw ApiError(400, "\"alternatives\" must be >= 0");
  return out;
}

ApiRequest parse_api_request(const RequestBody& request) {
  if (!is_json(request)) throw ApiError(400, "send a JSON object (Content-Type: application/json)");
  const json body = parse_object(request);
  ApiRequest out;
  bool is_array = false;
  if (!strings_field(body, "text", out.text, is_array)) {
    throw ApiError(400, "missing \"text\", a string or an array of sentences");
  }
  out.source = string_field(body, "source");
  out.target = string_field(body, "target");
  out.api_key = string_field(body, "api_key");
  out.beam = number_field<int64_t>(body, "beam");
  out.length_penalty = number_field<double>(body, "length_penalty");
  out.nbest = number_field<int64_t>(body, "nbest");
  const auto alignment = body.find("alignment");
  if (alignment != body.end() && !alignment->is_null()) {
    if (!alignment->is_boolean()) throw ApiError(400, "\"alignment\" must be true or false");
    out.alignment = alignment->get<bool>();
  }
  return out;
}

std::string error_json(const std::string& message) { return dump_json({{"error", message}}); }

std::string dump_json(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tfm
