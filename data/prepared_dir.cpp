#include "data/prepared_dir.h"

#include <cstdio>
#include <filesystem>
#include <map>
#include <stdexcept>

#include "data/dataset_file.h"
#include "text/option_names.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;

/// The shard number in SPLIT.NNN.bin, or -1 when `name` is not such a name.
int64_t shard_number(const std::string& name, const std::string& split) {
  const std::string prefix = split + ".", suffix = ".bin";
  if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return -1;
  }
  const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.size() < 3 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(digits);
}

Shard open_checked(const std::string& path, const Tokenizer& tokenizer, const fs::path& model_path) {
  Shard shard = open_shard(path);
  if (shard.vocab_size() != tokenizer.vocab_size()) {
    throw std::runtime_error(path + ": prepared with a " + std::to_string(shard.vocab_size()) +
                             "-piece vocabulary, but " + model_path.string() + " has " +
                             std::to_string(tokenizer.vocab_size()) + " (run `tfm prepare` again)");
  }
  return shard;
}

}  // namespace

std::vector<std::string> split_files(const std::string& dir, const std::string& split) {
  std::map<int64_t, std::string> numbered;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    const int64_t number = shard_number(name, split);
    if (number >= 0) numbered[number] = entry.path().string();
  }
  const fs::path whole = fs::path(dir) / (split + ".bin");
  const bool has_whole = fs::exists(whole, error);
  if (has_whole && !numbered.empty()) {
    throw std::runtime_error(dir + ": holds both " + whole.filename().string() + " and " +
                             fs::path(numbered.begin()->second).filename().string() +
                             " (two preparations mixed; run `tfm prepare` again into an empty directory)");
  }
  if (has_whole) return {whole.string()};
  std::vector<std::string> files;
  for (const auto& [number, path] : numbered) {
    if (number != static_cast<int64_t>(files.size())) {
      throw std::runtime_error(dir + ": shard " + std::to_string(files.size()) + " of the " + split +
                               " split is missing (found " + fs::path(path).filename().string() + ")");
    }
    files.push_back(path);
  }
  return files;
}

void remove_split_files(const std::string& dir, const std::string& split) {
  std::error_code error;
  std::vector<fs::path> doomed;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name == split + ".bin" || shard_number(name, split) >= 0) doomed.push_back(entry.path());
  }
  for (const auto& path : doomed) fs::remove(path, error);
}

PreparedData load_prepared(const std::string& dir) {
  const fs::path root(dir);
  const fs::path model_path = root / kPreparedModelFile;
  if (!fs::exists(model_path)) {
    throw std::runtime_error(model_path.string() + ": missing; is " + dir + " a directory written by `tfm prepare`?");
  }
  Tokenizer tokenizer = Tokenizer::from_file(model_path.string());
  const std::vector<std::string> files = split_files(dir, "train");
  if (files.empty()) throw std::runtime_error((root / kPreparedTrainFile).string() + ": missing (run `tfm prepare`)");
  std::vector<Shard> train;
  for (const auto& file : files) train.push_back(open_checked(file, tokenizer, model_path));
  std::optional<Shard> valid;
  if (fs::exists(root / kPreparedValidFile)) {
    valid = open_checked((root / kPreparedValidFile).string(), tokenizer, model_path);
  }
  return PreparedData{std::move(tokenizer), std::move(train), std::move(valid)};
}

PreparedData load_prepared(const std::vector<std::string>& dirs) {
  if (dirs.empty()) throw std::invalid_argument("load_prepared: no directory");
  PreparedData data = load_prepared(dirs.front());
  for (size_t d = 1; d < dirs.size(); ++d) {
    PreparedData more = load_prepared(dirs[d]);
    if (more.tokenizer.serialized() != data.tokenizer.serialized()) {
      throw std::runtime_error(dirs[d] + ": prepared with another SentencePiece model than " + dirs.front() +
                               " (prepare it with " + option_name("spm") + " " +
                               (fs::path(dirs.front()) / kPreparedModelFile).string() + ")");
    }
    for (Shard& shard : more.train) data.train.push_back(std::move(shard));
  }
  return data;
}

bool is_prepared_dir(const std::string& dir) {
  const fs::path root(dir);
  std::error_code error;
  if (!fs::is_directory(root, error) || !fs::exists(root / kPreparedModelFile, error)) return false;
  try {
    return !split_files(dir, "train").empty();
  } catch (const std::runtime_error&) {
    return true;  // a prepared directory, damaged: loading it says how
  }
}

}  // namespace tfm
