// `tfm tokenizer train|encode|decode`: build and inspect the SentencePiece subword model.
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "app/command.h"
#include "runtime/durable_file.h"
#include "runtime/threads.h"
#include "text/line_reader.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_trainer.h"

namespace tfm {
namespace {

struct TrainCommandOptions {
  TokenizerTrainOptions trainer;
  std::string output;
};

struct CodecCommandOptions {
  std::string model;
  std::string input = "-";
  bool pieces = false;
};

void run_train(const TrainCommandOptions& options) {
  validate(options.trainer);
  const auto start = std::chrono::steady_clock::now();
  const std::string model = train_tokenizer(options.trainer);
  write_file_durably(options.output, model);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const Tokenizer tokenizer = Tokenizer::from_serialized(model, options.output);
  spdlog::info("wrote {}: {} model, {} pieces, in {:.1f} s", options.output, options.trainer.model_type,
               tokenizer.vocab_size(), seconds);
}

void run_encode(const CodecCommandOptions& options) {
  const Tokenizer tokenizer = Tokenizer::from_file(options.model);
  LineReader input(options.input);
  std::string line;
  std::string out;
  while (input.next(line)) {
    out.clear();
    if (options.pieces) {
      for (const auto& piece : tokenizer.encode_pieces(line)) (out.empty() ? out : out += ' ') += piece;
    } else {
      for (const int64_t id : tokenizer.encode(line)) (out.empty() ? out : out += ' ') += std::to_string(id);
    }
    std::cout << out << '\n';
  }
}

std::vector<int64_t> parse_ids(const std::string& line, const LineReader& input) {
  std::vector<int64_t> ids;
  std::istringstream words(line);
  std::string word;
  while (words >> word) {
    size_t used = 0;
    int64_t id = -1;
    try {
      id = std::stoll(word, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != word.size()) {
      throw std::runtime_error(input.where() + ": '" + word + "' is not a token id (use --pieces for pieces)");
    }
    ids.push_back(id);
  }
  return ids;
}

void run_decode(const CodecCommandOptions& options) {
  const Tokenizer tokenizer = Tokenizer::from_file(options.model);
  LineReader input(options.input);
  std::string line;
  while (input.next(line)) {
    if (options.pieces) {
      std::vector<std::string> pieces;
      std::istringstream words(line);
      for (std::string piece; words >> piece;) pieces.push_back(piece);
      std::cout << tokenizer.decode_pieces(pieces) << '\n';
      continue;
    }
    const auto ids = parse_ids(line, input);
    for (const int64_t id : ids) {
      if (id < 0 || id >= tokenizer.vocab_size()) {
        throw std::runtime_error(input.where() + ": id " + std::to_string(id) + " outside the vocabulary of " +
                                 std::to_string(tokenizer.vocab_size()));
      }
    }
    std::cout << tokenizer.decode(ids) << '\n';
  }
}

void add_codec_options(CLI::App& command, CodecCommandOptions& options, const char* input_help) {
  command.add_option("--model,-m", options.model, "SentencePiece model file")->required();
  command.add_option("--input,-i", options.input, input_help)->capture_default_str();
  command.add_flag("--pieces", options.pieces, "Subword pieces instead of ids");
}

}  // namespace

void add_tokenizer_command(CLI::App& app, CommandAction& action) {
  CLI::App* tokenizer = app.add_subcommand("tokenizer", "Train or inspect a SentencePiece subword model");
  tokenizer->require_subcommand(1);

  auto train = std::make_shared<TrainCommandOptions>();
  CLI::App* train_cmd =
      tokenizer->add_subcommand("train", "Train a joint SentencePiece model on one or more corpus files (.gz allowed)");
  train_cmd->add_option("--input,-i", train->trainer.inputs, "Corpus files (source and target: one joint vocabulary)")
      ->required();
  train_cmd->add_option("--output,-o", train->output, "Model file to write (e.g. spm.model)")->required();
  train_cmd->add_option("--vocab-size", train->trainer.vocab_size, "Vocabulary size, special tokens included")
      ->capture_default_str();
  train_cmd->add_option("--model-type", train->trainer.model_type, "unigram or bpe")->capture_default_str();
  train_cmd
      ->add_option("--character-coverage", train->trainer.character_coverage,
                   "Share of characters the model covers (1.0 for Latin scripts)")
      ->capture_default_str();
  train_cmd
      ->add_option("--normalization", train->trainer.normalization,
                   "SentencePiece normalization rule (nmt_nfkc, nfkc, identity, ...)")
      ->capture_default_str();
  train_cmd
      ->add_option("--max-sentences", train->trainer.max_sentences,
                   "Train on a random sample of at most this many lines (0 = all)")
      ->capture_default_str();
  train_cmd->add_option("--seed", train->trainer.seed, "Random seed for sampling")->capture_default_str();
  train_cmd->callback([train, &action] { action = [train] { run_train(*train); }; });

  auto encode = std::make_shared<CodecCommandOptions>();
  CLI::App* encode_cmd = tokenizer->add_subcommand("encode", "Text lines to subword ids (or pieces), one line each");
  add_codec_options(*encode_cmd, *encode, "Text to encode (- for stdin, .gz allowed)");
  encode_cmd->callback([encode, &action] { action = [encode] { run_encode(*encode); }; });

  auto decode = std::make_shared<CodecCommandOptions>();
  CLI::App* decode_cmd = tokenizer->add_subcommand("decode", "Subword ids (or pieces) to text, one line each");
  add_codec_options(*decode_cmd, *decode, "Ids or pieces to decode (- for stdin)");
  decode_cmd->callback([decode, &action] { action = [decode] { run_decode(*decode); }; });
}

}  // namespace tfm
