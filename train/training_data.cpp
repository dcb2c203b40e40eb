#include "train/training_data.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "data/prepare_corpus.h"
#include "data/prepared_dir.h"
#include "runtime/crc32.h"
#include "runtime/durable_file.h"
#include "runtime/threads.h"
#include "text/option_names.h"
#include "text/unicode_text.h"

namespace fs = std::filesystem;

namespace tfm {
namespace {

/// What the cache was made from: inputs (with sizes and times) and the options that shape it.
/// The tokenizer is keyed apart (tokenizer_key), by content: a resumed run hands in the
/// checkpoint's copy of the very tokenizer the first run trained, and must find its cache.
nlohmann::json fingerprint(const TrainOptions& o) {
  auto file = [](const std::string& path) -> nlohmann::json {
    if (path.empty()) return nullptr;
    if (!fs::exists(path)) throw std::runtime_error(path + ": no such file");
    // As UTF-8 for JSON (invalid bytes as U+FFFD): size and time still tell two such paths apart.
    return {{"path", replace_invalid_utf8(fs::absolute(path).string())},
            {"bytes", fs::file_size(path)},
            {"modified", fs::last_write_time(path).time_since_epoch().count()}};
  };
  return {
      {"train_src", file(o.train_src)},           {"train_tgt", file(o.train_tgt)}, {"valid_src", file(o.valid_src)},
      {"valid_tgt", file(o.valid_tgt)},           {"vocab_size", o.vocab_size},     {"max_len", o.cleaning.max_len},
      {"max_len_ratio", o.cleaning.max_len_ratio}};
}

/// A tokenizer's identity: CRC-32 and size of its serialized model.
std::string tokenizer_key(const Tokenizer& tokenizer) {
  const std::string& bytes = tokenizer.serialized();
  const uint32_t crc = crc32_of(0, bytes.data(), bytes.size());
  return fmt::format("{:08x}-{}", crc, bytes.size());
}

/// The tokenizer the data must be encoded with, when one is given: a checkpoint's, else --spm's.
std::optional<Tokenizer> given_tokenizer(const TrainOptions& o, const std::optional<std::string>& tokenizer_proto) {
  if (tokenizer_proto) return Tokenizer::from_serialized(*tokenizer_proto, "checkpoint tokenizer");
  if (!o.spm.empty()) return Tokenizer::from_file(o.spm);
  return std::nullopt;
}

/// Whether the cache in `dir` was made from these inputs with this tokenizer (or, with none given,
/// with a tokenizer trained on these inputs).
bool cache_matches(const fs::path& dir, const nlohmann::json& inputs, const std::optional<Tokenizer>& given) {
  std::ifstream stored_file(dir / "inputs.json");
  if (!stored_file || !is_prepared_dir(dir.string())) return false;
  nlohmann::json stored;
  try {
    stored = nlohmann::json::parse(stored_file);
  } catch (const nlohmann::json::exception&) {
    return false;
  }
  if (!stored.is_object() || stored.value("inputs", nlohmann::json()) != inputs) return false;
  if (!given) return stored.value("tokenizer_source", "") == "trained";
  return stored.value("tokenizer", "") == tokenizer_key(*given);
}

/// --train-src/--train-tgt (or a TSV --train-src alone) as the shared preparation path sees them.
PrepareCorpusOptions corpus_options(const TrainOptions& o) {
  PrepareCorpusOptions corpus;
  corpus.train = o.train_tgt.empty() ? CorpusFiles{"", "", o.train_src} : CorpusFiles{o.train_src, o.train_tgt, ""};
  if (!o.valid_src.empty()) {
    corpus.valid = o.valid_tgt.empty() ? CorpusFiles{"", "", o.valid_src} : CorpusFiles{o.valid_src, o.valid_tgt, ""};
  }
  corpus.spm = o.spm;
  corpus.tokenizer.vocab_size = o.vocab_size;  // one joint vocabulary (§5.1)
  corpus.tokenizer.seed = static_cast<uint32_t>(o.batching.seed);
  corpus.prepare.cleaning = o.cleaning;
  corpus.prepare.threads = available_cores();
  return corpus;
}

/// check_fits_positions for one split (`first`: the number of the shard's first pair in the split).
void check_split_fits(const Shard& data, int64_t first, const ModelConfig& config, const std::string& split) {
  if (std::max(data.max_source_length(), data.max_target_length()) + 1 <= config.max_positions) return;
  for (int64_t i = 0; i < data.size(); ++i) {
    const int64_t longest = std::max(data.source_length(i), data.target_length(i));
    if (longest + 1 > config.max_positions) {
      throw std::invalid_argument(fmt::format(
          "{} pair {} has {} subwords, more than the model's {} learned positions hold with eos (filter the data "
          "with {} {} or raise {})",
          split, first + i + 1, longest, config.max_positions, option_name("max_len"), config.max_positions - 1,
          option_name("max_positions")));
    }
  }
}

/// --train-src as a list of prepared directories (DIR1:DIR2), or empty when it is not one.
std::vector<std::string> prepared_dirs(const std::string& train_src) {
  std::vector<std::string> dirs;
  size_t begin = 0;
  for (;;) {
    const size_t end = train_src.find(':', begin);
    dirs.push_back(train_src.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  for (const auto& dir : dirs) {
    if (!is_prepared_dir(dir)) return {};
  }
  return dirs;
}

}  // namespace

void check_fits_positions(const TrainingData& data, const ModelConfig& config) {
  if (config.positions != PositionEncoding::kLearned) return;
  int64_t first = 0;
  for (const Shard& shard : data.train) {
    check_split_fits(shard, first, config, "training");
    first += shard.size();
  }
  if (data.valid) check_split_fits(*data.valid, 0, config, "validation");
}

TrainingData load_training_data(const TrainOptions& o, const std::optional<std::string>& tokenizer_proto) {
  if (o.train_tgt.empty()) {
    if (const auto dirs = prepared_dirs(o.train_src); !dirs.empty()) {
      auto prepared = load_prepared(dirs);
      TrainingData data{std::move(prepared.tokenizer), std::move(prepared.train), std::move(prepared.valid)};
      if (!o.valid_src.empty()) {
        const PrepareCorpusOptions corpus = corpus_options(o);  // raw validation text, the directory's tokenizer
        const ParallelDataset valid = prepare_corpus_split(corpus.valid, "valid", data.tokenizer, corpus.prepare).data;
        data.valid = Shard::from_dataset(valid, data.tokenizer.vocab_size(),
                                         corpus.valid.tsv.empty() ? corpus.valid.source : corpus.valid.tsv);
      }
      return data;
    }
  }
  const fs::path cache = fs::path(o.save_dir) / "prepared";
  const auto inputs = fingerprint(o);
  std::optional<Tokenizer> given = given_tokenizer(o, tokenizer_proto);
  if (cache_matches(cache, inputs, given)) {
    spdlog::info("using the prepared data cached in {}", cache.string());
  } else {
    const std::string source = given ? "given" : "trained";
    std::error_code ignored;
    fs::remove(cache / "inputs.json", ignored);  // half-written shards must never pass for a finished cache
    const PreparedCorpus corpus = prepare_corpus(corpus_options(o), cache, std::move(given));
    const nlohmann::json record = {
        {"inputs", inputs}, {"tokenizer", tokenizer_key(corpus.tokenizer)}, {"tokenizer_source", source}};
    write_file_durably((cache / "inputs.json").string(), record.dump(2) + "\n");
  }
  auto prepared = load_prepared(cache.string());
  return {std::move(prepared.tokenizer), std::move(prepared.train), std::move(prepared.valid)};
}

}  // namespace tfm
