#include "serve/served_models.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include "decode/attention_probe.h"
#include "tests/decode/decode_test_support.h"
#include "tests/translation/translation_test_support.h"

namespace tfm {
namespace {

std::unique_ptr<Translator> tiny_translator(const Tokenizer& tokenizer) {
  torch::manual_seed(5);
  TranslatorOptions options;
  options.search.max_len_b = 6;
  options.search.max_len_a = 0.5;
  return std::make_unique<Translator>(
      std::vector<Transformer>{Transformer(testing::tiny_config(tokenizer.vocab_size(), 1, 1))}, tokenizer, options,
      torch::kCPU);
}

TEST(ServedModels, FindsTheModelOfAPair) {
  const Tokenizer tokenizer = testing::number_phrase_tokenizer();
  std::vector<ServedModel> models;
  models.push_back({"en", "de", tiny_translator(tokenizer)});
  models.push_back({"de", "en", tiny_translator(tokenizer)});
  models.push_back({"fr", "en", tiny_translator(tokenizer)});
  const ServedModels served(std::move(models));
  EXPECT_EQ(served.find("en", "de"), 0u);
  EXPECT_EQ(served.find("de", "en"), 1u);
  EXPECT_EQ(served.find("auto", "de"), 0u);            // one model translates into German
  EXPECT_EQ(served.find("auto", "en"), std::nullopt);  // two do into English: name the source
  EXPECT_EQ(served.find("en", "fr"), std::nullopt);
  const auto languages = nlohmann::json::parse(served.languages_json());
  ASSERT_EQ(languages.size(), 3u);  // de, en, fr: each names a source
  EXPECT_EQ(languages[0]["code"], "de");
  EXPECT_EQ(languages[0]["name"], "German");
  EXPECT_EQ(languages[0]["targets"], nlohmann::json::array({"en"}));
}

TEST(ServedModels, AModelWithoutAPairAnswersEveryPairAndStandsAlone) {
  const Tokenizer tokenizer = testing::number_phrase_tokenizer();
  std::vector<ServedModel> one;
  one.push_back({"", "", tiny_translator(tokenizer)});
  const ServedModels served(std::move(one));
  EXPECT_EQ(served.find("xx", "yy"), 0u);
  std::vector<ServedModel> two;
  two.push_back({"", "", tiny_translator(tokenizer)});
  two.push_back({"en", "de", tiny_translator(tokenizer)});
  EXPECT_THROW(ServedModels{std::move(two)}, std::invalid_argument);
  std::vector<ServedModel> twice;
  twice.push_back({"en", "de", tiny_translator(tokenizer)});
  twice.push_back({"en", "de", tiny_translator(tokenizer)});
  EXPECT_THROW(ServedModels{std::move(twice)}, std::invalid_argument);
}

TEST(ServedModels, LanesDecodeAsTheTranslatorWouldWithTheirSettings) {
  const Tokenizer tokenizer = testing::number_phrase_tokenizer();
  std::vector<ServedModel> models;
  models.push_back({"en", "de", tiny_translator(tokenizer)});
  ServedModels served(std::move(models));
  const std::vector<std::string> lines = {"one two three", "drei Katzen"};
  std::vector<std::vector<int64_t>> sources;
  for (const auto& line : lines) sources.push_back(tokenizer.encode(line));
  SearchOptions wide = served.defaults(0);
  wide.beam = 2;
  wide.nbest = 2;
  EXPECT_EQ(served.lane(0, served.defaults(0)).id, 0u);  // the default lane
  const LaneLease leased = served.lane(0, wide);
  const size_t lane = leased.id;
  EXPECT_NE(lane, 0u);
  EXPECT_EQ(served.lane(0, wide).id, lane);  // one lane per setting
  const auto results = served.decode(lane, sources, {true, false});
  const auto expected = served.model(0).translator->ids().translate(sources, wide);
  ASSERT_EQ(results.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_EQ(results[i].translation.nbest.size(), expected[i].nbest.size());
    EXPECT_EQ(results[i].translation.nbest[0].tokens, expected[i].nbest[0].tokens);
  }
  // The alignment asked for is the translator's: one link per output subword.
  const auto& best = results[0].translation.nbest[0].tokens;
  const auto maps = served.model(0).translator->ids().attention(results[0].translation.source_ids, best);
  EXPECT_EQ(results[0].alignment, hard_alignment(maps, -2));
  EXPECT_EQ(results[0].alignment.size(), best.size());
  EXPECT_TRUE(results[1].alignment.empty());
}

TEST(ServedModels, ALaneIsForgottenOnceNoRequestHoldsIt) {
  const Tokenizer tokenizer = testing::number_phrase_tokenizer();
  std::vector<ServedModel> models;
  models.push_back({"en", "de", tiny_translator(tokenizer)});
  ServedModels served(std::move(models));
  const std::vector<std::vector<int64_t>> sources = {tokenizer.encode("one two")};
  EXPECT_EQ(served.lanes(), 1u);
  // Clients that each send a length penalty of their own: lanes come and go, the server does not grow.
  size_t first = 0;
  for (int request = 0; request < 200; ++request) {
    SearchOptions own = served.defaults(0);
    own.length_penalty = 2.0 + 0.01 * request;  // never the default 1.5
    const LaneLease lease = served.lane(0, own);
    if (request == 0) first = lease.id;
    EXPECT_EQ(served.lanes(), 2u);
    if (request < 2) {
      EXPECT_EQ(served.decode(lease.id, sources, {false}).size(), 1u);
    }
  }
  EXPECT_EQ(served.lanes(), 1u);
  EXPECT_THROW(served.decode(first, sources, {false}), std::out_of_range);  // never reused for other settings
  // A lane held by a queued job (DecodeJob::keep) outlives the request that asked for it.
  SearchOptions own = served.defaults(0);
  own.beam = 2;
  std::shared_ptr<const void> kept_by_queue;
  size_t id = 0;
  {
    const LaneLease lease = served.lane(0, own);
    id = lease.id;
    kept_by_queue = lease.hold;
  }
  EXPECT_EQ(served.lane(0, own).id, id);
  EXPECT_EQ(served.decode(id, sources, {false}).size(), 1u);
  kept_by_queue.reset();
  EXPECT_EQ(served.lanes(), 1u);
  EXPECT_EQ(served.lane(0, served.defaults(0)).id, 0u);  // the default lane stays
}

}  // namespace
}  // namespace tfm
