#include "decode/translator.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tests/decode/decode_test_support.h"
#include "tests/test_support.h"

namespace tfm {
namespace {

/// A tokenizer trained on a few number phrases and an untrained model over its vocabulary:
/// enough to check the plumbing (order, line accounting, batching), not translation quality.
struct Fixture {
  Fixture() : tokenizer(testing::number_phrase_tokenizer()), model(make_model(tokenizer.vocab_size())) {}

  static Transformer make_model(int64_t vocab) {
    ModelConfig config;
    config.vocab_size = vocab;
    config.d_model = 16;
    config.d_ff = 32;
    config.heads = 2;
    config.encoder_layers = 1;
    config.decoder_layers = 1;
    torch::manual_seed(5);
    return Transformer(config);
  }
  Tokenizer tokenizer;
  Transformer model;
};

TranslatorOptions short_outputs() {
  TranslatorOptions options;
  options.search.max_len_b = 6;
  options.search.max_len_a = 0.5;
  return options;
}

TEST(Translator, LeavesTheCallersModelAsItWas) {
  // The trainer validates its live model through a Translator: weights, dtype and training mode
  // must be as they were afterwards, whatever precision the translation ran in.
  Fixture f;
  f.model->train();
  std::vector<torch::Tensor> before;
  for (const auto& parameter : f.model->parameters()) before.push_back(parameter.detach().clone());
  for (const auto precision : {Precision::kBFloat16, Precision::kFloat32}) {
    auto options = short_outputs();
    options.precision = precision;
    Translator translator({f.model}, f.tokenizer, options, torch::kCPU);
    ASSERT_EQ(translator.translate({"one cats .", "zwei"}).size(), 2U);
    EXPECT_TRUE(f.model->is_training());
    const auto after = f.model->parameters();
    ASSERT_EQ(after.size(), before.size());
    for (size_t i = 0; i < after.size(); ++i) {
      EXPECT_EQ(after[i].scalar_type(), torch::kFloat32);
      EXPECT_TRUE(torch::equal(after[i], before[i])) << "parameter " << i << " changed";
    }
  }
}

TEST(Translator, OneOutputPerLineEvenForOddInput) {
  Fixture f;
  auto options = short_outputs();
  options.max_source_len = 20;
  Translator translator({f.model}, f.tokenizer, options, torch::kCPU);
  std::string very_long;
  for (int i = 0; i < 50; ++i) very_long += "three cats ";
  const std::vector<std::string> lines = {"one cats .", "", "   ", very_long, "Katzen \xff\xfe invalid", "zwei"};
  const auto out = translator.translate(lines);
  ASSERT_EQ(out.size(), lines.size());
  EXPECT_TRUE(out[1].nbest.empty());
  EXPECT_EQ(out[1].text(), "");
  EXPECT_EQ(out[2].text(), "");
  EXPECT_TRUE(out[3].truncated);
  EXPECT_FALSE(out[0].truncated);
  for (const auto& translation : out) EXPECT_EQ(translation.text().find('\n'), std::string::npos);
  EXPECT_FALSE(out[4].nbest.empty());  // invalid UTF-8 still translates (as unknown pieces)
}

TEST(Translator, SmallBatchesGiveTheSameOutputsInOrder) {
  Fixture f;
  const std::vector<std::string> lines = {"one two three", "cats", "drei Katzen und zwei Hunde .", "two dogs",
                                          "", "three three three cats ."};
  auto options = short_outputs();
  Translator whole({f.model}, f.tokenizer, options, torch::kCPU);
  const auto together = whole.translate(lines);
  options.batch_size = 1;
  Translator single({f.model}, f.tokenizer, options, torch::kCPU);
  const auto one_by_one = single.translate(lines);
  for (size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(together[i].text(), one_by_one[i].text()) << i;
  // The input order is kept: translating a line alone gives what it got in the batch.
  for (size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(single.translate({lines[i]})[0].text(), together[i].text());
}

TEST(Translator, EnsembleOfOneModelTwiceEqualsTheModel) {
  Fixture f;
  const std::vector<std::string> lines = {"one two three", "drei Katzen"};
  Translator alone({f.model}, f.tokenizer, short_outputs(), torch::kCPU);
  Translator twice({f.model, f.model}, f.tokenizer, short_outputs(), torch::kCPU);
  const auto a = alone.translate(lines);
  const auto b = twice.translate(lines);
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(a[i].text(), b[i].text());
    EXPECT_NEAR(a[i].nbest[0].score, b[i].nbest[0].score, 1e-5);
  }
}

TEST(Translator, RejectsAModelOfAnotherVocabulary) {
  Fixture f;
  EXPECT_THROW(Translator({Fixture::make_model(f.tokenizer.vocab_size() + 1)}, f.tokenizer, short_outputs(),
                          torch::kCPU),
               std::invalid_argument);
}

}  // namespace
}  // namespace tfm
