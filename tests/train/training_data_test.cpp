#include "train/training_data.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <set>

#include "data/prepared_dir.h"
#include "tests/data_test_support.h"

namespace tfm {
namespace {

std::set<std::string> pieces_of(const Tokenizer& tokenizer) {
  std::set<std::string> pieces;
  for (int64_t id = 0; id < tokenizer.vocab_size(); ++id) pieces.insert(tokenizer.id_to_piece(id));
  return pieces;
}

/// 400 pairs written as aligned files, as one TSV file and as WMT SGML sets.
struct RawCorpus {
  RawCorpus() {
    std::tie(source, target) = testing::parallel_sentences(400);
    testing::write_lines(dir / "train.en", source);
    testing::write_lines(dir / "train.de", target);
    std::vector<std::string> tsv;
    for (size_t i = 0; i < source.size(); ++i) tsv.push_back(source[i] + "\t" + target[i]);
    testing::write_lines(dir / "train.tsv", tsv);
    write_sgml(dir / "train.en.sgm", source);
    write_sgml(dir / "train.de.sgm", target);
  }
  static void write_sgml(const std::filesystem::path& path, const std::vector<std::string>& lines) {
    std::vector<std::string> sgml = {"<srcset setid=\"toy\" srclang=\"any\">", "<doc docid=\"d1\" genre=\"news\">"};
    for (size_t i = 0; i < lines.size(); ++i)
      sgml.push_back("<seg id=\"" + std::to_string(i + 1) + "\">" + lines[i] + "</seg>");
    sgml.push_back("</doc>");
    sgml.push_back("</srcset>");
    testing::write_lines(path, sgml);
  }
  TrainOptions options(const std::string& train_src, const std::string& train_tgt, const std::string& run) const {
    TrainOptions o;
    o.train_src = (dir / train_src).string();
    o.train_tgt = train_tgt.empty() ? "" : (dir / train_tgt).string();
    o.save_dir = (dir / run).string();
    o.vocab_size = 60;
    return o;
  }
  testing::TempDir dir;
  std::vector<std::string> source, target;
};

TEST(TrainingData, TsvAndSgmlTrainTheSameTokenizerAsPlainFiles) {
  RawCorpus corpus;
  const TrainingData plain = load_training_data(corpus.options("train.en", "train.de", "plain"), std::nullopt);
  const TrainingData tsv = load_training_data(corpus.options("train.tsv", "", "tsv"), std::nullopt);
  const TrainingData sgml = load_training_data(corpus.options("train.en.sgm", "train.de.sgm", "sgml"), std::nullopt);
  // The tokenizer sees the sentences only: no tab-joined pairs, no <seg> markup.
  EXPECT_EQ(pieces_of(tsv.tokenizer), pieces_of(plain.tokenizer));
  EXPECT_EQ(pieces_of(sgml.tokenizer), pieces_of(plain.tokenizer));
  for (const auto& piece : pieces_of(sgml.tokenizer)) {
    EXPECT_EQ(piece.find("seg"), std::string::npos) << "markup reached the vocabulary: " << piece;
  }
  ASSERT_EQ(total_pairs(tsv.train), total_pairs(plain.train));
  ASSERT_EQ(total_pairs(sgml.train), total_pairs(plain.train));
  for (int64_t i = 0; i < total_pairs(plain.train); i += 37) {
    EXPECT_EQ(tsv.train[0].source_ids(i), plain.train[0].source_ids(i)) << "pair " << i;
    EXPECT_EQ(sgml.train[0].target_ids(i), plain.train[0].target_ids(i)) << "pair " << i;
  }
  // No temporary tokenizer input is left behind.
  for (const auto& entry : std::filesystem::recursive_directory_iterator(corpus.dir / "tsv")) {
    EXPECT_EQ(entry.path().string().find(".tmp"), std::string::npos) << entry.path();
  }
}

TEST(TrainingData, CachesThePreparationUntilAnInputChanges) {
  RawCorpus corpus;
  const TrainOptions options = corpus.options("train.en", "train.de", "run");
  const TrainingData first = load_training_data(options, std::nullopt);
  const auto cache = std::filesystem::path(options.save_dir) / "prepared";
  ASSERT_TRUE(is_prepared_dir(cache.string()));
  const auto written = std::filesystem::last_write_time(cache / kPreparedTrainFile);
  const TrainingData again = load_training_data(options, std::nullopt);
  EXPECT_EQ(std::filesystem::last_write_time(cache / kPreparedTrainFile), written) << "the cache was rebuilt";
  EXPECT_EQ(pieces_of(again.tokenizer), pieces_of(first.tokenizer));
  EXPECT_EQ(total_pairs(again.train), total_pairs(first.train));

  // One pair fewer: the cache no longer matches and the data are prepared anew.
  corpus.source.pop_back();
  corpus.target.pop_back();
  testing::write_lines(corpus.dir / "train.en", corpus.source);
  testing::write_lines(corpus.dir / "train.de", corpus.target);
  const TrainingData changed = load_training_data(options, std::nullopt);
  EXPECT_EQ(total_pairs(changed.train), total_pairs(first.train) - 1);
}

/// The file's inode: a rebuilt cache file is a new file (written beside and renamed over).
ino_t inode_of(const std::filesystem::path& path) {
  struct stat status {};
  return ::stat(path.c_str(), &status) == 0 ? status.st_ino : 0;
}

TEST(TrainingData, AResumedRunReusesTheCacheWithTheCheckpointsCopyOfTheTokenizer) {
  RawCorpus corpus;
  const TrainOptions options = corpus.options("train.en", "train.de", "run");
  const TrainingData first = load_training_data(options, std::nullopt);  // trains the tokenizer
  const auto cache = std::filesystem::path(options.save_dir) / "prepared";
  const ino_t written = inode_of(cache / kPreparedTrainFile);
  ASSERT_NE(written, 0U);
  // A resume hands in the tokenizer its checkpoint holds: the same one, so the same cache.
  const TrainingData resumed = load_training_data(options, first.tokenizer.serialized());
  EXPECT_EQ(inode_of(cache / kPreparedTrainFile), written) << "the first resume prepared the corpus again";
  EXPECT_EQ(resumed.train[0].source_ids(5), first.train[0].source_ids(5));
  // So does --spm naming a copy of that tokenizer.
  testing::write_text(corpus.dir / "copy.model", first.tokenizer.serialized());
  TrainOptions with_spm = options;
  with_spm.spm = (corpus.dir / "copy.model").string();
  load_training_data(with_spm, std::nullopt);
  EXPECT_EQ(inode_of(cache / kPreparedTrainFile), written) << "--spm with the same tokenizer prepared again";

  // Another tokenizer (another run's, with another vocabulary) does not match: prepared anew with it.
  TrainOptions other = corpus.options("train.en", "train.de", "other");
  other.vocab_size = 50;
  const TrainingData other_data = load_training_data(other, std::nullopt);
  const TrainingData retokenized = load_training_data(options, other_data.tokenizer.serialized());
  EXPECT_NE(inode_of(cache / kPreparedTrainFile), written);
  EXPECT_EQ(retokenized.tokenizer.vocab_size(), 50);
  EXPECT_EQ(retokenized.train[0].source_ids(5), other_data.train[0].source_ids(5));
  // And a run without a given tokenizer after that trains its own again rather than take that one.
  const TrainingData trained = load_training_data(options, std::nullopt);
  EXPECT_EQ(trained.tokenizer.vocab_size(), 60);
}

TEST(TrainingData, APreparedDirectoryWithRawValidation) {
  RawCorpus corpus;
  TrainOptions options = corpus.options("train.en", "train.de", "run");
  options.valid_src = (corpus.dir / "train.tsv").string();  // the same pairs, as TSV
  const TrainingData raw = load_training_data(options, std::nullopt);
  ASSERT_TRUE(raw.valid.has_value());

  TrainOptions from_dir = options;
  from_dir.train_src = (std::filesystem::path(options.save_dir) / "prepared").string();
  from_dir.train_tgt.clear();
  from_dir.save_dir = (corpus.dir / "second").string();
  const TrainingData prepared = load_training_data(from_dir, std::nullopt);
  EXPECT_EQ(total_pairs(prepared.train), total_pairs(raw.train));
  ASSERT_TRUE(prepared.valid.has_value());
  EXPECT_EQ(prepared.valid->size(), raw.valid->size());
  EXPECT_EQ(prepared.valid->source_ids(0), raw.valid->source_ids(0));
}

TEST(TrainingData, MismatchedFilesNameBothAndTheirCounts) {
  RawCorpus corpus;
  testing::write_lines(corpus.dir / "short.de", {"nur eine Zeile."});
  const std::string error = testing::error_of<std::runtime_error>(
      [&] { load_training_data(corpus.options("train.en", "short.de", "run"), std::nullopt); });
  EXPECT_NE(error.find("train.en"), std::string::npos) << error;
  EXPECT_NE(error.find("short.de"), std::string::npos) << error;
}

}  // namespace
}  // namespace tfm
