#include "train/training_data.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "data/prepare_corpus.h"
#include "data/prepared_dir.h"
#include "runtime/threads.h"

namespace fs = std::filesystem;

namespace tfm {
namespace {

/// What the cache was made from: inputs (with sizes and times) and the options that shape it.
nlohmann::json fingerprint(const TrainOptions& o, const std::string& tokenizer_origin) {
  auto file = [](const std::string& path) -> nlohmann::json {
    if (path.empty()) return nullptr;
    if (!fs::exists(path)) throw std::runtime_error(path + ": no such file");
    return {{"path", fs::absolute(path).string()},
            {"bytes", fs::file_size(path)},
            {"modified", fs::last_write_time(path).time_since_epoch().count()}};
  };
  return {{"train_src", file(o.train_src)}, {"train_tgt", file(o.train_tgt)}, {"valid_src", file(o.valid_src)},
          {"valid_tgt", file(o.valid_tgt)},  {"tokenizer", tokenizer_origin},   {"vocab_size", o.vocab_size},
          {"max_len", o.cleaning.max_len},   {"max_len_ratio", o.cleaning.max_len_ratio}};
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

}  // namespace

TrainingData load_training_data(const TrainOptions& o, const std::optional<std::string>& tokenizer_proto) {
  if (o.train_tgt.empty() && is_prepared_dir(o.train_src)) {
    auto prepared = load_prepared(o.train_src);
    TrainingData data{std::move(prepared.tokenizer), std::move(prepared.train), std::move(prepared.valid)};
    if (!o.valid_src.empty()) {
      const PrepareCorpusOptions corpus = corpus_options(o);  // raw validation text, the directory's tokenizer
      data.valid = std::move(prepare_corpus_split(corpus.valid, "valid", data.tokenizer, corpus.prepare).data);
    }
    return data;
  }
  const fs::path cache = fs::path(o.save_dir) / "prepared";
  const std::string origin = tokenizer_proto ? "checkpoint" : (o.spm.empty() ? "trained" : fs::absolute(o.spm).string());
  const auto inputs = fingerprint(o, origin);
  std::ifstream stored_file(cache / "inputs.json");
  if (stored_file && is_prepared_dir(cache.string())) {
    nlohmann::json stored;
    try {
      stored = nlohmann::json::parse(stored_file);
    } catch (const nlohmann::json::exception&) {
    }
    if (stored == inputs) {
      spdlog::info("using the prepared data cached in {}", cache.string());
      auto prepared = load_prepared(cache.string());
      return {std::move(prepared.tokenizer), std::move(prepared.train), std::move(prepared.valid)};
    }
  }
  std::optional<Tokenizer> given;
  if (tokenizer_proto) given = Tokenizer::from_serialized(*tokenizer_proto, "checkpoint tokenizer");
  PreparedCorpus corpus = prepare_corpus(corpus_options(o), cache, given);
  TrainingData data{std::move(corpus.tokenizer), std::move(corpus.train.data), std::nullopt};
  if (corpus.valid) data.valid = std::move(corpus.valid->data);
  save_prepared(cache.string(), data.tokenizer, data.train, data.valid ? &*data.valid : nullptr);
  std::ofstream(cache / "inputs.json") << inputs.dump(2) << '\n';
  return data;
}

}  // namespace tfm
