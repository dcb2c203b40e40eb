#include "tokenizer/tokenizer.h"

#include <sentencepiece_processor.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "text/special_ids.h"

namespace tfm {
namespace {

void check_special_ids(const sentencepiece::SentencePieceProcessor& sp, const std::string& origin) {
  if (sp.pad_id() != kPadId || sp.unk_id() != kUnkId || sp.bos_id() != kBosId || sp.eos_id() != kEosId) {
    throw std::invalid_argument(origin + ": special ids pad=" + std::to_string(sp.pad_id()) +
                                " unk=" + std::to_string(sp.unk_id()) + " bos=" + std::to_string(sp.bos_id()) +
                                " eos=" + std::to_string(sp.eos_id()) +
                                ", tfm needs pad=0 unk=1 bos=2 eos=3 (train it with `tfm tokenizer train`)");
  }
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open tokenizer model");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace

Tokenizer::Tokenizer(std::shared_ptr<const sentencepiece::SentencePieceProcessor> processor, std::string serialized)
    : processor_(std::move(processor)), serialized_(std::move(serialized)) {}

Tokenizer Tokenizer::from_file(const std::string& path) { return from_serialized(read_file(path), path); }

Tokenizer Tokenizer::from_serialized(const std::string& model_proto, const std::string& origin) {
  auto processor = std::make_shared<sentencepiece::SentencePieceProcessor>();
  const auto status = processor->LoadFromSerializedProto(model_proto);
  if (!status.ok()) {
    throw std::runtime_error(origin + ": not a SentencePiece model (" + status.ToString() + ")");
  }
  check_special_ids(*processor, origin);
  return Tokenizer(std::move(processor), model_proto);
}

std::vector<int64_t> Tokenizer::encode(std::string_view text) const {
  std::vector<int> ids;
  const auto status = processor_->Encode({text.data(), text.size()}, &ids);
  if (!status.ok()) throw std::runtime_error("tokenizer encode: " + status.ToString());
  return {ids.begin(), ids.end()};
}

std::vector<std::string> Tokenizer::encode_pieces(std::string_view text) const {
  std::vector<std::string> pieces;
  const auto status = processor_->Encode({text.data(), text.size()}, &pieces);
  if (!status.ok()) throw std::runtime_error("tokenizer encode: " + status.ToString());
  return pieces;
}

std::string Tokenizer::decode(const std::vector<int64_t>& ids) const {
  std::vector<int> kept;
  kept.reserve(ids.size());
  for (const int64_t id : ids) {
    if (id == kPadId || id == kBosId || id == kEosId) continue;
    if (id < 0 || id >= vocab_size()) {
      throw std::invalid_argument("tokenizer decode: id " + std::to_string(id) + " outside the vocabulary of " +
                                  std::to_string(vocab_size()));
    }
    kept.push_back(static_cast<int>(id));
  }
  std::string text;
  const auto status = processor_->Decode(kept, &text);
  if (!status.ok()) throw std::runtime_error("tokenizer decode: " + status.ToString());
  return text;
}

std::string Tokenizer::decode_pieces(const std::vector<std::string>& pieces) const {
  std::string text;
  const auto status = processor_->Decode(pieces, &text);
  if (!status.ok()) throw std::runtime_error("tokenizer decode: " + status.ToString());
  return text;
}

int64_t Tokenizer::vocab_size() const { return processor_->GetPieceSize(); }

std::string Tokenizer::id_to_piece(int64_t id) const {
  if (id < 0 || id >= vocab_size()) {
    throw std::invalid_argument("id " + std::to_string(id) + " outside the vocabulary of " +
                                std::to_string(vocab_size()));
  }
  return processor_->IdToPiece(static_cast<int>(id));
}

}  // namespace tfm
