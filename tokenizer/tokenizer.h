#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace tfm {

/// A SentencePiece subword model (unigram or BPE) with tfm's fixed special ids
/// (text/special_ids.h). Copies share the loaded model; all methods are thread-safe.
class Tokenizer {
 public:
  /// Loads a `.model` file. Throws std::runtime_error if it cannot be read or parsed,
  /// std::invalid_argument if its special ids differ from tfm's.
  static Tokenizer from_file(const std::string& path);
  /// Loads from the serialized model bytes (as embedded in a checkpoint).
  static Tokenizer from_serialized(const std::string& model_proto, const std::string& origin = "tokenizer");

  /// Subword ids of `text`, without bos/eos.
  std::vector<int64_t> encode(std::string_view text) const;
  std::vector<std::string> encode_pieces(std::string_view text) const;
  /// Text of `ids`; pad, bos and eos are skipped, unk is rendered as " \u2047 ".
  std::string decode(const std::vector<int64_t>& ids) const;
  std::string decode_pieces(const std::vector<std::string>& pieces) const;

  int64_t vocab_size() const;
  std::string id_to_piece(int64_t id) const;
  /// The model file's bytes: what a checkpoint stores so it can translate on its own.
  const std::string& serialized() const { return serialized_; }

 private:
  Tokenizer(std::shared_ptr<const sentencepiece::SentencePieceProcessor> processor, std::string serialized);
  std::shared_ptr<const sentencepiece::SentencePieceProcessor> processor_;
  std::string serialized_;
};

}  // namespace tfm
