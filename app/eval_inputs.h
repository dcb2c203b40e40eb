#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "app/decoding_options.h"
#include "app/runtime_options.h"
#include "metrics/bleu.h"
#include "metrics/chrf.h"

// What `tfm eval` is asked (its flags), what it will compute, and what it read, shared by the
// command (app/eval_command.cpp) and its report (app/eval_report.h).

namespace tfm {

/// The flags, as given.
struct EvalCommandOptions {
  std::vector<std::string> hyps;  // several only with --paired-bs
  std::vector<std::string> refs;
  std::vector<std::string> metrics = {"bleu"};
  std::string tokenize = "13a";
  bool lowercase = false;
  std::string smooth_method = "exp";
  double smooth_value = 0.0;
  bool has_smooth_value = false;
  bool sentence_level = false;
  int chrf_word_order = 0;
  bool chrf_lowercase = false;
  int width = 2;
  bool json = false;
  bool paired_bs = false;
  int64_t paired_bs_n = 1000;
  bool confidence = false;
  int64_t confidence_n = 1000;
  // Translate-and-score mode.
  std::vector<std::string> models;
  std::string src;
  std::string output;  // where to keep the translations (optional)
  DecodingOptions decoding;
  int64_t workers = 0;  // batches decoded side by side (0 = one per core)
  RuntimeOptions runtime;
};

/// What to compute, built and validated from the flags before any file is read.
struct EvalPlan {
  bool bleu = false;
  bool chrf = false;
  BleuOptions bleu_options;
  ChrfOptions chrf_options;
};

/// The segments to score: hyps[i] is scored against refs[r][i] for every reference file r.
struct EvalInputs {
  std::vector<std::string> hyps;
  std::vector<std::vector<std::string>> compared;  // --paired-bs: the --hyp files after the first
  std::vector<std::vector<std::string>> refs;
  // Translate-and-score mode only.
  double seconds = 0;
  int64_t target_tokens = 0;
};

}  // namespace tfm
