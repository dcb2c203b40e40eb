#include "model/model_config.h"

#include <nlohmann/json.hpp>

#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include "text/option_names.h"

namespace tfm {

namespace {

ModelConfig make(int64_t d_model, int64_t d_ff, int64_t heads, int64_t layers, double dropout) {
  ModelConfig config;
  config.d_model = d_model;
  config.d_ff = d_ff;
  config.heads = heads;
  config.encoder_layers = layers;
  config.decoder_layers = layers;
  config.dropout = dropout;
  return config;
}

// Names used in model files and on the command line. An unknown name is an error, never a default.
const std::vector<std::pair<AttentionScore, std::string>> kScoreNames = {{AttentionScore::kScaledDot, "scaled_dot"},
                                                                         {AttentionScore::kDot, "dot"},
                                                                         {AttentionScore::kGeneral, "general"},
                                                                         {AttentionScore::kAdditive, "additive"},
                                                                         {AttentionScore::kCosine, "cosine"}};
const std::vector<std::pair<PositionEncoding, std::string>> kPositionNames = {
    {PositionEncoding::kSinusoidal, "sinusoidal"}, {PositionEncoding::kLearned, "learned"}};
const std::vector<std::pair<NormPlacement, std::string>> kNormNames = {{NormPlacement::kPost, "post"},
                                                                       {NormPlacement::kPre, "pre"}};

template <typename Enum>
const std::string& name_of(const std::vector<std::pair<Enum, std::string>>& names, Enum value) {
  for (const auto& [candidate, name] : names) {
    if (candidate == value) return name;
  }
  throw std::logic_error("enum value without a name");
}

template <typename Enum>
Enum parse_name(const std::vector<std::pair<Enum, std::string>>& names, const std::string& name,
                const std::string& what) {
  std::string expected;
  for (const auto& [value, candidate] : names) {
    if (candidate == name) return value;
    expected += (expected.empty() ? "" : ", ") + candidate;
  }
  throw std::invalid_argument(what + " " + name + ": expected one of " + expected);
}

void require(bool condition, const std::string& message) {
  if (!condition) throw std::invalid_argument(message);
}

}  // namespace

ModelConfig preset(const std::string& name) {
  if (name == "base") return make(512, 2048, 8, 6, 0.1);
  if (name == "big") return make(1024, 4096, 16, 6, 0.3);
  // The CPU presets also drop attention weights and feed-forward activations (0.1 each, as
  // fairseq's small Transformers do): at bf16 speed an hour on Multi30k overfits without them
  // (BENCHMARKS.md, "Quality in an hour").
  if (name == "small" || name == "tiny") {
    ModelConfig config = name == "small" ? make(256, 1024, 4, 3, 0.1) : make(128, 512, 4, 2, 0.1);
    config.attention_dropout = 0.1;
    config.relu_dropout = 0.1;
    return config;
  }
  throw std::invalid_argument(option_name("preset") + " " + name + ": expected base, big, small or tiny");
}

void validate(const ModelConfig& c) {
  require(c.vocab_size > 4, "vocabulary size " + std::to_string(c.vocab_size) + ": must exceed the 4 special tokens");
  require(c.d_model > 0 && c.d_ff > 0, option_name("d_model") + " and " + option_name("d_ff") + " must be positive");
  require(c.heads > 0 && c.d_model % c.heads == 0, option_name("heads") + " " + std::to_string(c.heads) +
                                                       ": must be positive and divide " + option_name("d_model") + " " +
                                                       std::to_string(c.d_model));
  require(c.encoder_layers > 0 && c.decoder_layers > 0,
          option_name("encoder_layers") + " and " + option_name("decoder_layers") + " must be positive");
  for (const auto& [key, p] : {std::pair{"dropout", c.dropout}, std::pair{"attention_dropout", c.attention_dropout},
                               std::pair{"relu_dropout", c.relu_dropout}}) {
    require(p >= 0.0 && p < 1.0, option_name(key) + " " + (std::ostringstream() << p).str() + ": must be in [0, 1)");
  }
  require(c.attention_window >= 0, option_name("attention_window") + " must be >= 0 (0 = unrestricted)");
  require(c.max_positions > 0, option_name("max_positions") + " must be positive");
  if (c.positions == PositionEncoding::kSinusoidal) {
    require(c.d_model % 2 == 0, "sinusoidal positions need an even " + option_name("d_model"));
  }
}

void to_json(nlohmann::json& json, const ModelConfig& c) {
  json = {{"vocab_size", c.vocab_size},
          {"d_model", c.d_model},
          {"d_ff", c.d_ff},
          {"heads", c.heads},
          {"encoder_layers", c.encoder_layers},
          {"decoder_layers", c.decoder_layers},
          {"dropout", c.dropout},
          {"attention_dropout", c.attention_dropout},
          {"relu_dropout", c.relu_dropout},
          {"score", name_of(kScoreNames, c.score)},
          {"attention_window", c.attention_window},
          {"positions", name_of(kPositionNames, c.positions)},
          {"max_positions", c.max_positions},
          {"norm", name_of(kNormNames, c.norm)},
          {"tie_embeddings", c.tie_embeddings}};
}

void from_json(const nlohmann::json& json, ModelConfig& c) {
  try {
    json.at("vocab_size").get_to(c.vocab_size);
    json.at("d_model").get_to(c.d_model);
    json.at("d_ff").get_to(c.d_ff);
    json.at("heads").get_to(c.heads);
    json.at("encoder_layers").get_to(c.encoder_layers);
    json.at("decoder_layers").get_to(c.decoder_layers);
    json.at("dropout").get_to(c.dropout);
    json.at("attention_dropout").get_to(c.attention_dropout);
    json.at("relu_dropout").get_to(c.relu_dropout);
    c.score = parse_name(kScoreNames, json.at("score").get<std::string>(), "attention score");
    json.at("attention_window").get_to(c.attention_window);
    c.positions = parse_name(kPositionNames, json.at("positions").get<std::string>(), "positions");
    json.at("max_positions").get_to(c.max_positions);
    c.norm = parse_name(kNormNames, json.at("norm").get<std::string>(), "norm placement");
    json.at("tie_embeddings").get_to(c.tie_embeddings);
  } catch (const nlohmann::json::exception& error) {
    throw std::invalid_argument(std::string("model config: ") + error.what());
  }
}

std::string to_string(AttentionScore score) { return name_of(kScoreNames, score); }
std::string to_string(PositionEncoding positions) { return name_of(kPositionNames, positions); }
std::string to_string(NormPlacement norm) { return name_of(kNormNames, norm); }

AttentionScore attention_score_from_string(const std::string& name) {
  return parse_name(kScoreNames, name, option_name("attention_score"));
}
PositionEncoding position_encoding_from_string(const std::string& name) {
  return parse_name(kPositionNames, name, option_name("positions"));
}
NormPlacement norm_placement_from_string(const std::string& name) {
  return parse_name(kNormNames, name, option_name("norm"));
}

}  // namespace tfm
