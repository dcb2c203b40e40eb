#include "train/train_options.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <stdexcept>
#include <utility>

#include "decode/search_options.h"
#include "runtime/threads.h"
#include "text/option_names.h"
#include "text/unicode_text.h"

namespace tfm {

void validate(const TrainOptions& o) {
  auto require = [](bool ok, const std::string& message) {
    if (!ok) throw std::invalid_argument(message);
  };
  require(!o.train_src.empty(), option_name("train_src") + " is required");
  require(!o.save_dir.empty(), option_name("save_dir") + " is required");
  require(!o.valid_src.empty() || o.valid_tgt.empty(), option_name("valid_tgt") + " needs " + option_name("valid_src"));
  require(o.vocab_size > 4, option_name("vocab_size") + " must exceed the 4 special tokens");
  validate(o.batching);  // --max-tokens, --max-sentences
  require(o.update_freq >= 1, option_name("update_freq") + " must be >= 1");
  require(o.sub_batches >= 0 && o.sub_batches <= kMostThreads,
          option_name("sub_batches") + " must be within 0 (auto) and " + std::to_string(kMostThreads));
  require(o.valid_max_sentences >= 0, option_name("valid_max_sentences") + " must be >= 0 (0 = all)");
  require(o.label_smoothing >= 0 && o.label_smoothing < 1, option_name("label_smoothing") + " must be in [0, 1)");
  require(o.clip_norm >= 0, option_name("clip_norm") + " must be >= 0");
  // Adam's own checks, made here so that the message names the flag and comes before any work.
  for (const auto& [key, beta] : {std::pair{"adam_beta1", o.adam_beta1}, std::pair{"adam_beta2", o.adam_beta2}}) {
    require(beta >= 0 && beta < 1, option_name(key) + " must be in [0, 1)");
  }
  require(o.adam_eps >= 0 && std::isfinite(o.adam_eps), option_name("adam_eps") + " must be a finite number >= 0");
  require(o.max_epochs >= 0 && o.max_updates >= 0 && o.time_limit_minutes >= 0,
          option_name("max_epochs") + ", " + option_name("max_updates") + " and " + option_name("time_limit") +
              " must be >= 0");
  require(o.patience >= 0 && o.validate_every >= 0 && o.save_interval_updates >= 0,
          option_name("patience") + ", " + option_name("validate_every") + " and " +
              option_name("save_interval_updates") + " must be >= 0");
  require(o.keep_last >= 0, option_name("keep_last") + " must be >= 0");
  require(o.average_last >= 0, option_name("average_last") + " must be >= 0");
  require(o.valid_beam >= 1 && o.valid_beam <= kLargestBeam,
          option_name("valid_beam") + " must be within 1 and " + std::to_string(kLargestBeam));
  require(o.best_metric == "bleu" || o.best_metric == "loss",
          option_name("best_metric") + " " + o.best_metric + ": expected bleu or loss");
  require(o.log_interval >= 1, option_name("log_interval") + " must be >= 1");
  // float16's 5-bit exponent flushes small gradients to zero unless the loss is scaled up first;
  // bfloat16 has float32's range and needs no scaling.
  require(o.dtype != "float16" && o.dtype != "fp16",
          option_name("dtype") +
              " float16: training in float16 needs dynamic loss scaling, which tfm does not do (small "
              "gradients would underflow to zero); use bfloat16 or float32 (float16 is for translation)");
  validate(o.cleaning);
  validate(o.lr);
  require(o.lr.cooldown == 0 || has_budget(o), option_name("lr_cooldown") +
                                                   " needs a budget to end on: " + option_name("time_limit") + ", " +
                                                   option_name("max_updates") + " or " + option_name("max_epochs"));
}

bool has_budget(const TrainOptions& o) { return o.time_limit_minutes > 0 || o.max_updates > 0 || o.max_epochs > 0; }

void to_json(nlohmann::json& json, const TrainOptions& o) {
  // A path is bytes and JSON is UTF-8: the record shows a path's invalid bytes as U+FFFD (it is
  // read back for the recipe's numbers only, never to open the files).
  json = {{"train_src", replace_invalid_utf8(o.train_src)},
          {"train_tgt", replace_invalid_utf8(o.train_tgt)},
          {"valid_src", replace_invalid_utf8(o.valid_src)},
          {"valid_tgt", replace_invalid_utf8(o.valid_tgt)},
          {"vocab_size", o.vocab_size},
          {"max_len", o.cleaning.max_len},
          {"max_len_ratio", o.cleaning.max_len_ratio},
          {"max_tokens", o.batching.max_tokens},
          {"max_sentences", o.batching.max_sentences},
          {"seed", o.batching.seed},
          {"update_freq", o.update_freq},
          {"sub_batches", o.sub_batches},
          {"lr_scheduler", o.lr.kind},
          {"lr_factor", o.lr.factor},
          {"lr", o.lr.peak_lr},
          {"warmup", o.lr.warmup},
          {"lr_cooldown", o.lr.cooldown},
          {"adam_betas", {o.adam_beta1, o.adam_beta2}},
          {"adam_eps", o.adam_eps},
          {"label_smoothing", o.label_smoothing},
          {"clip_norm", o.clip_norm},
          {"dtype", o.dtype},
          {"save_interval_updates", o.save_interval_updates},
          {"validate_every", o.validate_every}};
}

}  // namespace tfm
