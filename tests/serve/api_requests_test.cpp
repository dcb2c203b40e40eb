#include "serve/api_requests.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/serve/api_error_support.h"

namespace tfm {
namespace {

RequestBody json_body(const std::string& body) { return {"application/json", body, {}}; }

using testing::status_of;

TEST(LibreRequest, TakesQAsAStringOrAnArray) {
  const auto one = parse_libre_request(json_body(R"({"q": "Hello", "source": "en", "target": "de"})"));
  EXPECT_EQ(one.q, std::vector<std::string>{"Hello"});
  EXPECT_FALSE(one.q_is_array);
  EXPECT_EQ(one.source, "en");
  EXPECT_EQ(one.target, "de");
  const auto two = parse_libre_request(json_body(R"({"q": ["a", "b"], "source": "en", "target": "de"})"));
  EXPECT_EQ(two.q, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(two.q_is_array);
}

TEST(LibreRequest, ReadsAFormBody) {
  RequestBody form{"application/x-www-form-urlencoded",
                   "q=Hi&source=en&target=de&alternatives=2",
                   {{"q", "Hi"}, {"source", "en"}, {"target", "de"}, {"alternatives", "2"}, {"api_key", "k"}}};
  const auto parsed = parse_libre_request(form);
  EXPECT_EQ(parsed.q, std::vector<std::string>{"Hi"});
  EXPECT_EQ(parsed.alternatives, 2);
  EXPECT_EQ(parsed.api_key, "k");
}

TEST(LibreRequest, RefusesWhatItCannotRead) {
  EXPECT_EQ(status_of([] { parse_libre_request(json_body("{\"q\": ")); }), 400);             // malformed JSON
  EXPECT_EQ(status_of([] { parse_libre_request(json_body("[1]")); }), 400);                  // not an object
  EXPECT_EQ(status_of([] { parse_libre_request(json_body(R"({"source": "en"})")); }), 400);  // no q
  EXPECT_EQ(status_of([] { parse_libre_request(json_body(R"({"q": 3})")); }), 400);
  EXPECT_EQ(status_of([] { parse_libre_request(json_body(R"({"q": ["a", 1]})")); }), 400);
  EXPECT_EQ(status_of([] { parse_libre_request(json_body(R"({"q": "a", "format": "html"})")); }), 400);
  EXPECT_EQ(status_of([] { parse_libre_request(json_body(R"({"q": "a", "alternatives": -1})")); }), 400);
  EXPECT_EQ(status_of([] { parse_libre_request({"text/plain", "q=a", {}}); }), 400);
  EXPECT_EQ(status_of([] { parse_libre_request({"application/x-www-form-urlencoded", "", {}}); }), 400);
  RequestBody bad_number{"application/x-www-form-urlencoded", "", {{"q", "a"}, {"alternatives", "2x"}}};
  EXPECT_EQ(status_of([&] { parse_libre_request(bad_number); }), 400);
}

TEST(LibreRequest, ReadsInvalidUtf8AsReplacementCharacters) {
  const auto parsed =
      parse_libre_request(json_body("{\"q\": \"a\xff"
                                    "b\"}"));
  EXPECT_EQ(parsed.q.front(),
            "a\xEF\xBF\xBD"
            "b");
}

TEST(ApiRequest, ReadsSearchSettings) {
  const auto parsed = parse_api_request(json_body(
      R"({"text": ["a", "b"], "source": "en", "target": "de", "beam": 2, "length_penalty": 0.6, "nbest": 2,
          "alignment": true})"));
  EXPECT_EQ(parsed.text.size(), 2u);
  EXPECT_EQ(parsed.beam, 2);
  EXPECT_EQ(parsed.length_penalty, 0.6);
  EXPECT_EQ(parsed.nbest, 2);
  EXPECT_TRUE(parsed.alignment);
  EXPECT_EQ(status_of([] { parse_api_request(json_body(R"({"text": "a", "beam": 1.5})")); }), 400);
  EXPECT_EQ(status_of([] { parse_api_request(json_body(R"({"text": "a", "alignment": 1})")); }), 400);
  EXPECT_EQ(status_of([] { parse_api_request(json_body(R"({"q": "a"})")); }), 400);
}

TEST(ApiJson, DumpsInvalidUtf8WithoutThrowing) {
  const std::string text = dump_json({{"t", std::string("a\xff")}});
  EXPECT_EQ(text, "{\"t\":\"a\xEF\xBF\xBD\"}");
  EXPECT_EQ(nlohmann::json::parse(error_json("no")).at("error"), "no");
}

}  // namespace
}  // namespace tfm
