#pragma once
// A toy translation task for the trainer's tests: six pairs, a tokenizer over them, a tiny model.
#include <cstdint>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/model_config.h"
#include "tests/test_support.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_trainer.h"
#include "train/train_options.h"
#include "train/training_data.h"

namespace tfm::testing {

/// Six pairs of a toy task.
inline const std::vector<std::pair<std::string, std::string>> kToyPairs = {
    {"one cat", "eine Katze"},  {"two cats", "zwei Katzen"},   {"one dog", "ein Hund"},
    {"two dogs", "zwei Hunde"}, {"three cats", "drei Katzen"}, {"three dogs", "drei Hunde"}};

/// A 30-piece tokenizer trained on the toy pairs (written to `dir`).
inline Tokenizer toy_tokenizer(const TempDir& dir) {
  std::string text;
  for (int repeat = 0; repeat < 20; ++repeat)
    for (const auto& [en, de] : kToyPairs) text += en + "\n" + de + "\n";
  write_text(dir / "corpus.txt", text);
  TokenizerTrainOptions options;
  options.inputs = {(dir / "corpus.txt").string()};
  options.vocab_size = 30;
  return Tokenizer::from_serialized(train_tokenizer(options));
}

/// A handful of pairs, a tokenizer over them and a tiny model config.
struct ToyTask {
  ToyTask() : data{toy_tokenizer(dir), {}, std::nullopt} {
    ParallelDataset pairs;
    for (const auto& [en, de] : kToyPairs) {
      pairs.append(data.tokenizer.encode(en), data.tokenizer.encode(de));
      sources.push_back(en);
      targets.push_back(de);
    }
    data.train = {Shard::from_dataset(pairs, data.tokenizer.vocab_size(), "toy")};
    config.vocab_size = data.tokenizer.vocab_size();
    config.d_model = 32;
    config.d_ff = 64;
    config.heads = 2;
    config.encoder_layers = 1;
    config.decoder_layers = 1;
    options.train_src = "toy";
    options.save_dir = (dir / "run").string();
    options.batching.max_tokens = 12;  // a few pairs per batch: several batches per epoch
    options.lr.kind = "inverse_sqrt";
    options.lr.peak_lr = 3e-3;
    options.lr.warmup = 20;
    options.lr.d_model = 32;
    options.keep_last = 0;
    options.log_interval = 1000;
  }
  TempDir dir;
  TrainingData data;
  std::vector<std::string> sources, targets;
  ModelConfig config;
  TrainOptions options;
};

/// The updates at which metrics.jsonl records a validation.
inline std::vector<int64_t> validated_updates(const std::string& save_dir) {
  std::ifstream metrics(save_dir + "/metrics.jsonl");
  std::vector<int64_t> updates;
  for (std::string line; std::getline(metrics, line);) {
    const auto record = nlohmann::json::parse(line);
    if (record.at("type") == "valid") updates.push_back(record.at("update").get<int64_t>());
  }
  return updates;
}

}  // namespace tfm::testing
