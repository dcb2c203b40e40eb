#include "train/training_data.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "data/prepare_dataset.h"
#include "data/prepared_dir.h"
#include "runtime/threads.h"
#include "tokenizer/tokenizer_trainer.h"

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

Tokenizer obtain_tokenizer(const TrainOptions& o, const std::optional<std::string>& tokenizer_proto) {
  if (tokenizer_proto) return Tokenizer::from_serialized(*tokenizer_proto, "checkpoint tokenizer");
  if (!o.spm.empty()) return Tokenizer::from_file(o.spm);
  TokenizerTrainOptions trainer;
  // One joint vocabulary (§5.1); a TSV file holds both sides already.
  trainer.inputs = o.train_tgt.empty() ? std::vector<std::string>{o.train_src}
                                       : std::vector<std::string>{o.train_src, o.train_tgt};
  trainer.vocab_size = o.vocab_size;
  trainer.seed = static_cast<uint32_t>(o.batching.seed);
  spdlog::info("training a joint {}-piece SentencePiece model on {} {}", o.vocab_size, o.train_src, o.train_tgt);
  return Tokenizer::from_serialized(train_tokenizer(trainer), "trained tokenizer");
}

ParallelDataset prepare_logged(const std::string& source, const std::string& target, const std::string& name,
                               const Tokenizer& tokenizer, const TrainOptions& o) {
  PrepareOptions prepare;
  prepare.cleaning = o.cleaning;
  prepare.threads = available_cores();
  auto split = prepare_split(source, target, tokenizer, prepare);
  log_report(name, split.report, o.cleaning);
  if (split.data.size() == 0) throw std::runtime_error(source + ": no pair left after cleaning (check --max-len)");
  return std::move(split.data);
}

}  // namespace

TrainingData load_training_data(const TrainOptions& o, const std::optional<std::string>& tokenizer_proto) {
  if (o.train_tgt.empty() && is_prepared_dir(o.train_src)) {
    auto prepared = load_prepared(o.train_src);
    TrainingData data{std::move(prepared.tokenizer), std::move(prepared.train), std::move(prepared.valid)};
    if (!o.valid_src.empty()) data.valid = prepare_logged(o.valid_src, o.valid_tgt, "valid", data.tokenizer, o);
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
  Tokenizer tokenizer = obtain_tokenizer(o, tokenizer_proto);
  TrainingData data{tokenizer, prepare_logged(o.train_src, o.train_tgt, "train", tokenizer, o), std::nullopt};
  if (!o.valid_src.empty()) data.valid = prepare_logged(o.valid_src, o.valid_tgt, "valid", tokenizer, o);
  save_prepared(cache.string(), tokenizer, data.train, data.valid ? &*data.valid : nullptr);
  std::ofstream(cache / "inputs.json") << inputs.dump(2) << '\n';
  return data;
}

}  // namespace tfm
