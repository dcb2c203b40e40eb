#include "app/model_options.h"

namespace tfm {

void add_model_options(CLI::App& command, ModelOptions& o) {
  const std::string group = "Model (ignored when resuming: the checkpoint's architecture is kept)";
  command
      .add_option("--preset", o.preset,
                  "auto (small below 1M training pairs, else base), base, big (the paper's), small or tiny (for CPUs)")
      ->capture_default_str()
      ->group(group);
  command.add_option("--d-model", o.d_model, "Model width")->group(group);
  command.add_option("--d-ff", o.d_ff, "Feed-forward inner width")->group(group);
  command.add_option("--heads", o.heads, "Attention heads (must divide --d-model)")->group(group);
  command.add_option("--encoder-layers", o.encoder_layers, "Encoder layers")->group(group);
  command.add_option("--decoder-layers", o.decoder_layers, "Decoder layers")->group(group);
  command.add_option("--dropout", o.dropout, "Dropout on sub-layer outputs and embeddings")->group(group);
  command
      .add_option("--attention-dropout", o.attention_dropout,
                  "Dropout on attention weights (default: the preset's; 0.1 for small and tiny, 0 for base and big)")
      ->group(group);
  command
      .add_option("--relu-dropout", o.relu_dropout,
                  "Dropout inside the feed-forward block (default: the preset's, as --attention-dropout)")
      ->group(group);
  command.add_option("--attention-score", o.attention_score, "scaled_dot (default), dot, general, additive, cosine")
      ->group(group);
  command.add_option("--attention-window", o.attention_window, "Restricted self-attention radius (0 = all)")
      ->group(group);
  command.add_option("--positions", o.positions, "sinusoidal (default) or learned")->group(group);
  command.add_option("--max-positions", o.max_positions, "Longest sequence with learned positions")->group(group);
  command.add_option("--norm", o.norm, "post (the paper's) or pre LayerNorm placement")->group(group);
  command.add_flag("--untie-embeddings", o.untied, "Separate source, target and output matrices")->group(group);
}

ModelConfig build_config(const ModelOptions& o, int64_t vocab_size) {
  ModelConfig config = preset(o.preset);
  config.vocab_size = vocab_size;
  auto set = [](auto& field, const auto& value) {
    if (value) field = *value;
  };
  set(config.d_model, o.d_model);
  set(config.d_ff, o.d_ff);
  set(config.heads, o.heads);
  set(config.encoder_layers, o.encoder_layers);
  set(config.decoder_layers, o.decoder_layers);
  set(config.dropout, o.dropout);
  set(config.attention_dropout, o.attention_dropout);
  set(config.relu_dropout, o.relu_dropout);
  set(config.attention_window, o.attention_window);
  set(config.max_positions, o.max_positions);
  if (!o.attention_score.empty()) config.score = attention_score_from_string(o.attention_score);
  if (!o.positions.empty()) config.positions = position_encoding_from_string(o.positions);
  if (!o.norm.empty()) config.norm = norm_placement_from_string(o.norm);
  if (o.untied) config.tie_embeddings = false;
  validate(config);
  return config;
}

}  // namespace tfm
