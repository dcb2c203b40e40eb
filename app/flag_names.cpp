#include "app/flag_names.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "text/option_names.h"

namespace tfm {
namespace {

// Keys are the fields of the libraries' options structs; scripts/lint/flag_names.py checks that
// every key a library names is here (or is known to have no flag).
constexpr std::pair<std::string_view, std::string_view> kFlags[] = {
    {"adam_beta1", "--adam-beta1"},
    {"adam_beta2", "--adam-beta2"},
    {"adam_eps", "--adam-eps"},
    {"attention_dropout", "--attention-dropout"},
    {"attention_score", "--attention-score"},
    {"attention_window", "--attention-window"},
    {"average_last", "--average-last"},
    {"batch_size", "--batch-size"},
    {"beam", "--beam"},
    {"best_metric", "--best-metric"},
    {"character_coverage", "--character-coverage"},
    {"chrf_word_order", "--chrf-word-order"},
    {"clip_norm", "--clip-norm"},
    {"d_ff", "--d-ff"},
    {"d_model", "--d-model"},
    {"decoder_layers", "--decoder-layers"},
    {"device", "--device"},
    {"dist_backend", "--dist-backend"},
    {"dist_timeout", "--dist-timeout"},
    {"dropout", "--dropout"},
    {"dtype", "--dtype"},
    {"encoder_layers", "--encoder-layers"},
    {"heads", "--heads"},
    {"keep_last", "--keep-last"},
    {"label_smoothing", "--label-smoothing"},
    {"length_penalty", "--lenpen"},
    {"log_interval", "--log-interval"},
    {"lr", "--lr"},
    {"lr_cooldown", "--lr-cooldown"},
    {"lr_factor", "--lr-factor"},
    {"lr_scheduler", "--lr-scheduler"},
    {"max_epochs", "--max-epochs"},
    {"max_len", "--max-len"},
    {"max_len_a", "--max-len-a"},
    {"max_len_b", "--max-len-b"},
    {"max_len_ratio", "--max-len-ratio"},
    {"max_positions", "--max-positions"},
    {"max_sentences", "--max-sentences"},
    {"max_source_len", "--max-source-len"},
    {"max_tokens", "--max-tokens"},
    {"max_updates", "--max-updates"},
    {"min_len", "--min-len"},
    {"model_type", "--model-type"},
    {"nbest", "--nbest"},
    {"no_repeat_ngram", "--no-repeat-ngram"},
    {"no_resume", "--no-resume"},
    {"norm", "--norm"},
    {"normalization", "--normalization"},
    {"patience", "--patience"},
    {"positions", "--positions"},
    {"preset", "--preset"},
    {"quantize", "--quantize"},
    {"relu_dropout", "--relu-dropout"},
    {"sampling", "--sampling"},
    {"save_dir", "--save-dir"},
    {"save_interval_updates", "--save-interval-updates"},
    {"shard_size", "--shard-size"},
    {"shortlist_frequent", "--shortlist-frequent"},
    {"shortlist_iterations", "--shortlist-iterations"},
    {"shortlist_per_source", "--shortlist-per-source"},
    {"smooth_method", "--smooth-method"},
    {"smooth_value", "--smooth-value"},
    {"spm", "--spm"},
    {"temperature", "--temperature"},
    {"time_limit", "--time-limit"},
    {"tokenize", "--tokenize"},
    {"train_src", "--train-src"},
    {"unk_penalty", "--unk-penalty"},
    {"update_freq", "--update-freq"},
    {"sub_batches", "--sub-batches"},
    {"valid_beam", "--valid-beam"},
    {"valid_max_sentences", "--valid-max-sentences"},
    {"valid_src", "--valid-src"},
    {"valid_tgt", "--valid-tgt"},
    {"validate_every", "--validate-every"},
    {"vocab_size", "--vocab-size"},
    {"warmup", "--warmup"},
    {"workers", "--workers"},
};

std::string spelled_as_flag(std::string_view key) {
  const auto flag = flag_for_option(key);
  return flag ? *flag : std::string(key);
}

}  // namespace

std::optional<std::string> flag_for_option(std::string_view key) {
  const auto found =
      std::find_if(std::begin(kFlags), std::end(kFlags), [&](const auto& entry) { return entry.first == key; });
  if (found == std::end(kFlags)) return std::nullopt;
  return std::string(found->second);
}

void spell_options_as_flags() { set_option_spelling(&spelled_as_flag); }

}  // namespace tfm
