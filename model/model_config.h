#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace tfm {

/// How attention compares a query with a key (§3.2.1 and the alternatives it cites).
enum class AttentionScore {
  kScaledDot,  // q·k / sqrt(d_k): the paper's
  kDot,        // q·k (Luong et al., 2015)
  kGeneral,    // q^T W k, one W per head (Luong et al., 2015)
  kAdditive,   // v^T tanh(W_q q + W_k k), per head (Bahdanau et al., 2015)
  kCosine,     // g * cos(q, k) with a learned sharpness g per head (content-based, Graves et al., 2014)
};

enum class PositionEncoding { kSinusoidal, kLearned };
/// Post-norm: LayerNorm(x + Sublayer(x)), the paper's (§3.1). Pre-norm: x + Sublayer(LayerNorm(x)).
enum class NormPlacement { kPost, kPre };

/// Everything that defines a Transformer's architecture; saved in every model file, so a file
/// alone rebuilds its model. Builds the options of every layer in one place (model/*.cpp).
struct ModelConfig {
  int64_t vocab_size = 0;  // shared source/target subword vocabulary (§5.1)
  int64_t d_model = 512;
  int64_t d_ff = 2048;
  int64_t heads = 8;           // h; d_k = d_v = d_model / h
  int64_t encoder_layers = 6;  // N
  int64_t decoder_layers = 6;
  double dropout = 0.1;            // P_drop on sub-layer outputs and embedding sums (§5.4)
  double attention_dropout = 0.0;  // on attention weights (not in the paper)
  double relu_dropout = 0.0;       // inside the feed-forward block (not in the paper)
  AttentionScore score = AttentionScore::kScaledDot;
  int64_t attention_window = 0;  // restricted self-attention over r neighbours (Table 1); 0 = all
  PositionEncoding positions = PositionEncoding::kSinusoidal;
  int64_t max_positions = 1024;  // learned positions only; sinusoids extend to any length
  NormPlacement norm = NormPlacement::kPost;
  bool tie_embeddings = true;  // source, target and output projection share one matrix (§3.4)
};

/// The paper's base (d_model 512, d_ff 2048, h 8, N 6) and big (1024, 4096, 16, 6, dropout 0.3)
/// models, and two that train on a 2-core CPU: small (256, 1024, 4, 3) and tiny (128, 512, 4, 2).
/// Throws std::invalid_argument for an unknown name.
ModelConfig preset(const std::string& name);

/// Throws std::invalid_argument naming the offending field.
void validate(const ModelConfig& config);

void to_json(nlohmann::json& json, const ModelConfig& config);
/// Throws std::invalid_argument for unknown enum values or missing fields.
void from_json(const nlohmann::json& json, ModelConfig& config);

/// Names as in model files and flags; the parsers throw std::invalid_argument for unknown names.
std::string to_string(AttentionScore score);
std::string to_string(PositionEncoding positions);
std::string to_string(NormPlacement norm);
AttentionScore attention_score_from_string(const std::string& name);
PositionEncoding position_encoding_from_string(const std::string& name);
NormPlacement norm_placement_from_string(const std::string& name);

}  // namespace tfm
