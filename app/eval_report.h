#pragma once
#include "app/eval_inputs.h"

// `tfm eval`'s results on stdout, as sacreBLEU 2.6.0 prints them: its score lines (aligned on
// " = "), or with --json its JSON report; with --model the translation speed as well.

namespace tfm {

/// One line (or JSON object) per metric, each computed over the whole corpus; with --confidence
/// its bootstrap interval, resampled from SACREBLEU_SEED (std::invalid_argument for a bad one).
void print_corpus_scores(const EvalCommandOptions& options, const EvalPlan& plan, const EvalInputs& inputs);

/// One score per segment, for the single metric asked for (sacreBLEU's -sl).
void print_sentence_scores(const EvalCommandOptions& options, const EvalPlan& plan, const EvalInputs& inputs);

/// --paired-bs: every --hyp file against the first, on the same resamples, as sacreBLEU's test.
/// SACREBLEU_SEED gives the seed of the resamples (std::invalid_argument for a bad one).
void print_paired_test(const EvalCommandOptions& options, const EvalPlan& plan, const EvalInputs& inputs);

}  // namespace tfm
