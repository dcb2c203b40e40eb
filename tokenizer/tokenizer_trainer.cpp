#include "tokenizer/tokenizer_trainer.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdint>
#include <limits>
#include <regex>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "runtime/threads.h"
#include "text/line_reader.h"
#include "text/option_names.h"
#include "text/special_ids.h"

// Exported by libsentencepiece but not declared in its public headers; without it the
// trainer prints hundreds of progress lines to stderr.
namespace sentencepiece::logging {
void SetMinLogLevel(int level);
}

namespace tfm {
namespace {

/// Feeds SentencePiece the lines of several files in turn (so .gz corpora need no unpacking).
class MultiFileSentences : public sentencepiece::SentenceIterator {
 public:
  explicit MultiFileSentences(const std::vector<std::string>& paths) : paths_(paths) { Next(); }

  bool done() const override { return done_; }
  const std::string& value() const override { return line_; }
  sentencepiece::util::Status status() const override { return status_; }

  void Next() override {
    try {
      for (;;) {
        if (!reader_) {
          if (next_path_ == paths_.size()) {
            done_ = true;
            return;
          }
          reader_ = std::make_unique<LineReader>(paths_[next_path_++]);
        }
        if (reader_->next(line_)) return;
        reader_.reset();
      }
    } catch (const std::exception& error) {
      // SentencePiece reports the status and stops; train_tokenizer rethrows it.
      status_ = sentencepiece::util::Status(sentencepiece::util::StatusCode::kInternal, error.what());
      done_ = true;
    }
  }

 private:
  std::vector<std::string> paths_;
  size_t next_path_ = 0;
  std::unique_ptr<LineReader> reader_;
  std::string line_;
  bool done_ = false;
  sentencepiece::util::Status status_;
};

}  // namespace

void validate(const TokenizerTrainOptions& options) {
  if (options.inputs.empty()) throw std::invalid_argument("tokenizer training needs at least one input file");
  if (options.model_type != "unigram" && options.model_type != "bpe") {
    throw std::invalid_argument(option_name("model_type") + " " + options.model_type + ": expected unigram or bpe");
  }
  if (options.vocab_size <= kNumSpecialIds) {
    throw std::invalid_argument(option_name("vocab_size") + " " + std::to_string(options.vocab_size) +
                                ": must exceed " + std::to_string(kNumSpecialIds) + " (the special tokens)");
  }
  // SentencePiece counts pieces in an int32 (past it: "cannot parse ... as int", after reading).
  if (options.vocab_size > std::numeric_limits<int32_t>::max()) {
    throw std::invalid_argument(option_name("vocab_size") + " " + std::to_string(options.vocab_size) +
                                ": must be at most " + std::to_string(std::numeric_limits<int32_t>::max()));
  }
  // SentencePiece's built-in rules; another name failed only once its corpus had been read.
  const std::set<std::string> rules = {"nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf", "identity"};
  if (rules.count(options.normalization) == 0) {
    throw std::invalid_argument(option_name("normalization") + " " + options.normalization +
                                ": expected nmt_nfkc, nfkc, nmt_nfkc_cf, nfkc_cf or identity");
  }
  if (!(options.character_coverage > 0.0 && options.character_coverage <= 1.0)) {
    throw std::invalid_argument(option_name("character_coverage") + " " + std::to_string(options.character_coverage) +
                                ": must be in (0, 1]");
  }
  if (options.max_sentences < 0) throw std::invalid_argument(option_name("max_sentences") + " must be >= 0");
}

std::string train_tokenizer(const TokenizerTrainOptions& options) {
  validate(options);
  const std::unordered_map<std::string, std::string> args = {
      {"model_type", options.model_type},
      {"vocab_size", std::to_string(options.vocab_size)},
      {"character_coverage", std::to_string(options.character_coverage)},
      {"normalization_rule_name", options.normalization},
      {"input_sentence_size", std::to_string(options.max_sentences)},
      {"shuffle_input_sentence", "true"},
      {"num_threads", std::to_string(options.threads > 0 ? options.threads : available_cores())},
      {"pad_id", std::to_string(kPadId)},
      {"unk_id", std::to_string(kUnkId)},
      {"bos_id", std::to_string(kBosId)},
      {"eos_id", std::to_string(kEosId)},
      {"hard_vocab_limit", "true"},
  };
  sentencepiece::SetRandomGeneratorSeed(options.seed);
  sentencepiece::logging::SetMinLogLevel(1);  // warnings and errors only
  MultiFileSentences sentences(options.inputs);
  std::string model_proto;
  const auto status = sentencepiece::SentencePieceTrainer::Train(args, &sentences, &model_proto);
  if (!sentences.status().ok()) throw std::runtime_error(sentences.status().error_message());
  if (!status.ok()) {
    // SentencePiece: "Vocabulary size too high (8000). Please set it to a value <= 1234." (some
    // versions say "is too high")
    const std::string message = status.ToString();
    std::smatch found;
    const bool too_high = message.find("Vocabulary size too high") != std::string::npos ||
                          message.find("Vocabulary size is too high") != std::string::npos;
    if (too_high && std::regex_search(message, found, std::regex("<= ([0-9]+)"))) {
      throw std::invalid_argument("corpus too small for " + option_name("vocab_size") + " " +
                                  std::to_string(options.vocab_size) + "; at most " + found[1].str() + " fits");
    }
    throw std::runtime_error("tokenizer training failed: " + message);
  }
  return model_proto;
}

}  // namespace tfm
