#include "decode/search_options.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "decode/hypothesis.h"
#include "text/option_names.h"

namespace tfm {

void validate(const SearchOptions& options) {
  if (options.beam < 1 || options.beam > kLargestBeam) {
    throw std::invalid_argument(option_name("beam") + " must be within 1 and " + std::to_string(kLargestBeam));
  }
  if (options.nbest < 1 || options.nbest > options.beam) {
    throw std::invalid_argument(option_name("nbest") + " " + std::to_string(options.nbest) +
                                ": must be between 1 and " + option_name("beam") + " " + std::to_string(options.beam));
  }
  if (!std::isfinite(options.length_penalty)) {
    throw std::invalid_argument(option_name("length_penalty") + " must be a finite number");
  }
  if (!std::isfinite(options.unk_penalty)) {
    throw std::invalid_argument(option_name("unk_penalty") + " must be a finite number");
  }
  if (!std::isfinite(options.max_len_a)) {
    throw std::invalid_argument(option_name("max_len_a") + " must be a finite number");
  }
  if (options.max_len_a < 0 || options.max_len_b < 0 || (options.max_len_a == 0 && options.max_len_b == 0)) {
    throw std::invalid_argument(option_name("max_len_a") + "/" + option_name("max_len_b") +
                                " must be >= 0 and allow at least one token");
  }
  if (options.no_repeat_ngram < 0) throw std::invalid_argument(option_name("no_repeat_ngram") + " must be >= 0");
  if (options.max_len_limit < 0) throw std::invalid_argument("max_len_limit must be >= 0");
  if (options.min_len < 0) throw std::invalid_argument(option_name("min_len") + " must be >= 0");
  const SamplingOptions& sampling = options.sampling;
  if (!sampling.enabled) return;
  if (options.nbest != 1)
    throw std::invalid_argument(option_name("sampling") + " draws one translation per sentence: no " +
                                option_name("nbest"));
  if (sampling.top_k < 0) throw std::invalid_argument(option_name("sampling") + " topk:K needs K >= 0");
  if (!(sampling.top_p > 0 && sampling.top_p <= 1))
    throw std::invalid_argument(option_name("sampling") + " topp:P needs 0 < P <= 1");
  if (!(sampling.temperature > 0) || !std::isfinite(sampling.temperature)) {
    throw std::invalid_argument(option_name("temperature") + " must be > 0");
  }
}

int64_t max_output_length(int64_t source_length, const SearchOptions& options) {
  // Saturates instead of overflowing when a huge --max-len-a or --max-len-b asks for no limit.
  constexpr int64_t kUnbounded = int64_t{1} << 62;
  const double scaled = options.max_len_a * static_cast<double>(source_length);
  int64_t length = scaled < static_cast<double>(kUnbounded) ? static_cast<int64_t>(scaled) : kUnbounded;
  length = options.max_len_b < kUnbounded - length ? length + options.max_len_b : kUnbounded;
  if (options.max_len_limit > 0) length = std::min(length, options.max_len_limit);
  return std::max<int64_t>(length, 1);
}

bool reaches_max_length(size_t tokens, int64_t source_length, const SearchOptions& options) {
  return static_cast<int64_t>(tokens) + 1 >= max_output_length(source_length, options);
}

double length_penalty(int64_t length, double alpha) {
  return std::pow((5.0 + static_cast<double>(length)) / 6.0, alpha);
}

Hypothesis make_hypothesis(std::vector<int64_t> tokens, double log_prob, double alpha) {
  Hypothesis hypothesis;
  hypothesis.log_prob = log_prob;
  hypothesis.score = log_prob / length_penalty(static_cast<int64_t>(tokens.size()) + 1, alpha);
  hypothesis.tokens = std::move(tokens);
  return hypothesis;
}

}  // namespace tfm
