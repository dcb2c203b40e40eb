#include "model/model_config.h"

#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

namespace tfm {
namespace {

TEST(ModelConfig, PresetsMatchThePaper) {
  const auto base = preset("base");
  EXPECT_EQ(base.d_model, 512);
  EXPECT_EQ(base.d_ff, 2048);
  EXPECT_EQ(base.heads, 8);
  EXPECT_EQ(base.encoder_layers, 6);
  EXPECT_DOUBLE_EQ(base.dropout, 0.1);
  const auto big = preset("big");
  EXPECT_EQ(big.d_model, 1024);
  EXPECT_EQ(big.heads, 16);
  EXPECT_DOUBLE_EQ(big.dropout, 0.3);
  EXPECT_DOUBLE_EQ(base.attention_dropout, 0.0);  // not in the paper
  EXPECT_DOUBLE_EQ(base.relu_dropout, 0.0);
  EXPECT_EQ(preset("small").d_model, 256);
  EXPECT_EQ(preset("tiny").encoder_layers, 2);
  for (const char* cpu : {"small", "tiny"}) {  // the Multi30k search's winner (issue 14)
    EXPECT_DOUBLE_EQ(preset(cpu).dropout, 0.1) << cpu;
    EXPECT_DOUBLE_EQ(preset(cpu).attention_dropout, 0.1) << cpu;
    EXPECT_DOUBLE_EQ(preset(cpu).relu_dropout, 0.1) << cpu;
  }
  EXPECT_THROW(preset("huge"), std::invalid_argument);
}

TEST(ModelConfig, JsonRoundTrip) {
  auto config = preset("small");
  config.vocab_size = 8000;
  config.score = AttentionScore::kAdditive;
  config.norm = NormPlacement::kPre;
  config.positions = PositionEncoding::kLearned;
  config.attention_window = 3;
  const nlohmann::json json = config;
  const ModelConfig back = json;
  EXPECT_EQ(nlohmann::json(back), json);
  EXPECT_EQ(json["score"], "additive");
}

TEST(ModelConfig, UnknownNamesAndMissingFieldsAreErrors) {
  auto config = preset("tiny");
  config.vocab_size = 100;
  nlohmann::json json = config;
  json["score"] = "magic";
  EXPECT_THROW(json.get<ModelConfig>(), std::invalid_argument);
  json = config;
  json.erase("d_ff");
  EXPECT_THROW(json.get<ModelConfig>(), std::invalid_argument);
  EXPECT_THROW(attention_score_from_string("luong"), std::invalid_argument);
}

TEST(ModelConfig, ValidateNamesTheProblem) {
  auto config = preset("base");
  config.vocab_size = 1000;
  EXPECT_NO_THROW(validate(config));
  config.heads = 7;
  try {
    validate(config);
    FAIL();
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("heads 7"), std::string::npos) << error.what();
  }
  config = preset("base");
  EXPECT_THROW(validate(config), std::invalid_argument);  // no vocabulary
  config.vocab_size = 1000;
  config.dropout = 1.0;
  EXPECT_THROW(validate(config), std::invalid_argument);
  for (const double bad : {-0.1, 1.0, std::nan("")}) {
    config = preset("base");
    config.vocab_size = 1000;
    config.relu_dropout = bad;
    try {
      validate(config);
      ADD_FAILURE() << "relu_dropout " << bad << " accepted";
    } catch (const std::invalid_argument& error) {
      EXPECT_NE(std::string(error.what()).find("relu_dropout"), std::string::npos) << error.what();
    }
  }
}

}  // namespace
}  // namespace tfm
