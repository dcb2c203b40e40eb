#include "data/prepared_dir.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "data/dataset_file.h"
#include "runtime/durable_file.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;

ParallelDataset load_split(const fs::path& path, const Tokenizer& tokenizer, const fs::path& model_path) {
  LoadedDataset loaded = load_dataset(path.string());
  if (loaded.vocab_size != tokenizer.vocab_size()) {
    throw std::runtime_error(path.string() + ": prepared with a " + std::to_string(loaded.vocab_size) +
                             "-piece vocabulary, but " + model_path.string() + " has " +
                             std::to_string(tokenizer.vocab_size()) + " (run `tfm prepare` again)");
  }
  return std::move(loaded.data);
}

}  // namespace

void save_prepared(const std::string& dir, const Tokenizer& tokenizer, const ParallelDataset& train,
                   const ParallelDataset* valid) {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) throw std::runtime_error(dir + ": cannot create directory (" + error.message() + ")");
  const fs::path root(dir);
  write_file_durably((root / kPreparedModelFile).string(), tokenizer.serialized());
  save_dataset(train, tokenizer.vocab_size(), (root / kPreparedTrainFile).string());
  if (valid != nullptr) {
    save_dataset(*valid, tokenizer.vocab_size(), (root / kPreparedValidFile).string());
  } else {
    fs::remove(root / kPreparedValidFile, error);
  }
}

PreparedData load_prepared(const std::string& dir) {
  const fs::path root(dir);
  const fs::path model_path = root / kPreparedModelFile;
  if (!fs::exists(model_path)) {
    throw std::runtime_error(model_path.string() + ": missing; is " + dir + " a directory written by `tfm prepare`?");
  }
  Tokenizer tokenizer = Tokenizer::from_file(model_path.string());
  ParallelDataset train = load_split(root / kPreparedTrainFile, tokenizer, model_path);
  std::optional<ParallelDataset> valid;
  if (fs::exists(root / kPreparedValidFile)) valid = load_split(root / kPreparedValidFile, tokenizer, model_path);
  return PreparedData{std::move(tokenizer), std::move(train), std::move(valid)};
}

bool is_prepared_dir(const std::string& dir) {
  const fs::path root(dir);
  std::error_code error;
  return fs::is_directory(root, error) && fs::exists(root / kPreparedModelFile, error) &&
         fs::exists(root / kPreparedTrainFile, error);
}

}  // namespace tfm
