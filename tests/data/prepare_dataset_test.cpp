#include "data/prepare_dataset.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "data/batching.h"
#include "data/prepare_corpus.h"
#include "data/prepared_dir.h"
#include "tests/data_test_support.h"

namespace tfm {
namespace {

/// Writes train.en/train.de: the generated pairs plus the four kinds of pair cleaning drops.
struct DirtyCorpus {
  testing::TempDir dir;
  std::vector<std::string> source, target;
  std::string source_path = (dir / "train.en").string(), target_path = (dir / "train.de.gz").string();

  DirtyCorpus() {
    std::tie(source, target) = testing::parallel_sentences(500);
    std::string long_en, long_de;
    for (int i = 0; i < 60; ++i) long_en += "a man rides a bike over the street ", long_de += "ein Mann fährt ";
    source.insert(source.begin() + 10, {"", "Two dogs.", long_en, "a"});
    target.insert(target.begin() + 10,
                  {"Ein Mann.", "   ", long_de, "zwei Hunde spielen im Schnee und ein Mädchen liest"});
    testing::write_lines(source_path, source);
    testing::write_lines(target_path, target);
  }
};

PrepareOptions strict_options() {
  PrepareOptions options;
  options.cleaning.max_len = 40;
  options.cleaning.max_len_ratio = 4.0;
  options.chunk_pairs = 64;  // several chunks
  options.threads = 2;
  return options;
}

TEST(PrepareDataset, KeepsCleanPairsInOrderAndCountsEachDroppedOne) {
  const DirtyCorpus corpus;
  const Tokenizer& tokenizer = testing::parallel_tokenizer();
  const PreparedSplit split =
      testing::prepare_files(corpus.source_path, corpus.target_path, tokenizer, strict_options());
  EXPECT_EQ(split.report.read, 504);
  EXPECT_EQ(split.report.empty, 2);      // "" and "   "
  EXPECT_EQ(split.report.too_long, 1);   // 480 subwords with --max-len 40
  EXPECT_EQ(split.report.bad_ratio, 1);  // "a" against a long sentence
  EXPECT_EQ(split.report.kept, 500);
  ASSERT_EQ(split.data.size(), 500);
  // Kept pairs are the generated ones, in corpus order.
  const auto [source, target] = testing::parallel_sentences(500);
  for (int64_t i = 0; i < split.data.size(); ++i) {
    ASSERT_EQ(split.data.source.ids(i), tokenizer.encode(source[i])) << i;
    ASSERT_EQ(split.data.target.ids(i), tokenizer.encode(target[i])) << i;
  }
}

TEST(PrepareDataset, OverLongPairIsFilteredSoBatchingNeverSeesIt) {
  const DirtyCorpus corpus;
  const PreparedSplit split =
      testing::prepare_files(corpus.source_path, corpus.target_path, testing::parallel_tokenizer(), strict_options());
  BatchingOptions batching;
  batching.max_tokens = 64;  // far below the dropped 480-subword pair
  const auto batches =
      make_batches(testing::as_shard(split.data, testing::parallel_tokenizer().vocab_size()), batching, 1);
  int64_t pairs = 0;
  for (const auto& batch : batches) pairs += static_cast<int64_t>(batch.size());
  EXPECT_EQ(pairs, 500);
}

TEST(PrepareDataset, TsvGivesTheSameDatasetAsTwoFiles) {
  const DirtyCorpus corpus;
  std::vector<std::string> lines;
  for (size_t i = 0; i < corpus.source.size(); ++i) lines.push_back(corpus.source[i] + "\t" + corpus.target[i]);
  testing::write_lines(corpus.dir / "train.tsv.gz", lines);
  const Tokenizer& tokenizer = testing::parallel_tokenizer();
  const auto from_files = testing::prepare_files(corpus.source_path, corpus.target_path, tokenizer, strict_options());
  const auto from_tsv = testing::prepare_files((corpus.dir / "train.tsv.gz").string(), "", tokenizer, strict_options());
  EXPECT_EQ(from_tsv.data.source.tokens, from_files.data.source.tokens);
  EXPECT_EQ(from_tsv.data.target.offsets, from_files.data.target.offsets);
  EXPECT_EQ(from_tsv.report.kept, from_files.report.kept);
}

TEST(PrepareDataset, PreparedDirectoryDecodesBackToTheTokenizedTextExactly) {
  const DirtyCorpus corpus;
  const Tokenizer& tokenizer = testing::parallel_tokenizer();
  const auto [valid_en, valid_de] = testing::parallel_sentences(30);
  testing::write_lines(corpus.dir / "valid.en", valid_en);
  testing::write_lines(corpus.dir / "valid.de", valid_de);
  PrepareCorpusOptions options;
  options.train = {corpus.source_path, corpus.target_path, ""};
  options.valid = {(corpus.dir / "valid.en").string(), (corpus.dir / "valid.de").string(), ""};
  options.prepare = strict_options();
  options.shard_bytes = 4096;  // several shards
  const std::string out = (corpus.dir / "prepared").string();
  const PreparedCorpus written = prepare_corpus(options, out, tokenizer);
  EXPECT_EQ(written.train.kept, 500);
  EXPECT_GT(written.train_files.size(), 3u);
  ASSERT_TRUE(is_prepared_dir(out));

  const PreparedData loaded = load_prepared(out);
  ASSERT_EQ(loaded.train.size(), written.train_files.size());
  ASSERT_EQ(total_pairs(loaded.train), 500);
  ASSERT_TRUE(loaded.valid.has_value());
  ASSERT_EQ(loaded.valid->size(), 30);
  const auto [source, target] = testing::parallel_sentences(500);
  size_t i = 0;  // pairs stay in corpus order across the shards
  for (const Shard& shard : loaded.train) {
    EXPECT_LE(std::filesystem::file_size(shard.name()), 4096u);
    shard.verify();
    for (int64_t k = 0; k < shard.size(); ++k, ++i) {
      // The loaded tokenizer is the saved one; ids and decoded text match encoding the raw line now.
      ASSERT_EQ(loaded.tokenizer.decode(shard.source_ids(k)), tokenizer.decode(tokenizer.encode(source[i])));
      ASSERT_EQ(loaded.tokenizer.decode(shard.target_ids(k)), tokenizer.decode(tokenizer.encode(target[i])));
      ASSERT_EQ(shard.source_ids(k), tokenizer.encode(source[i]));
    }
  }
  for (int64_t k = 0; k < 30; ++k) ASSERT_EQ(loaded.valid->target_ids(k), tokenizer.encode(valid_de[k]));
  EXPECT_EQ(loaded.tokenizer.serialized(), tokenizer.serialized());

  // Prepared again into one shard, without validation: nothing of the first preparation is left.
  options.valid = {};
  options.shard_bytes = kDefaultShardBytes;
  prepare_corpus(options, out, tokenizer);
  const PreparedData again = load_prepared(out);
  ASSERT_EQ(again.train.size(), 1u);
  EXPECT_EQ(std::filesystem::path(again.train[0].name()).filename(), kPreparedTrainFile);
  EXPECT_EQ(again.train[0].size(), 500);
  EXPECT_FALSE(again.valid.has_value());
}

TEST(PrepareDataset, TokenizerSampleIsDrawnFromTheWholeCorpus) {
  // 2000 pairs whose second half uses words the first half never does: a sample of 200 pairs from
  // the head alone would give a vocabulary without them.
  testing::TempDir dir;
  std::vector<std::string> en, de;
  for (int i = 0; i < 2000; ++i) {
    en.push_back(i < 1000 ? "a man rides a bike" : "zebras quietly juggle xylophones");
    de.push_back(i < 1000 ? "ein Mann fährt Fahrrad" : "Zebras jonglieren leise Xylophone");
  }
  testing::write_lines(dir / "t.en", en);
  testing::write_lines(dir / "t.de", de);
  PrepareCorpusOptions options;
  options.train = {(dir / "t.en").string(), (dir / "t.de").string(), ""};
  options.tokenizer.vocab_size = 40;
  options.tokenizer.max_sentences = 400;  // 200 pairs
  const PreparedCorpus written = prepare_corpus(options, dir / "out");
  EXPECT_EQ(written.train.kept, 2000);
  const auto pieces = written.tokenizer.encode("zebras quietly juggle xylophones");
  EXPECT_EQ(std::count(pieces.begin(), pieces.end(), kUnkId), 0) << "the tail's characters are in the vocabulary";
}

TEST(PrepareDataset, ReaderErrorsPassThrough) {
  testing::TempDir dir;
  testing::write_lines(dir / "a.en", {"x", "y"});
  testing::write_lines(dir / "a.de", {"x"});
  EXPECT_THROW(
      testing::prepare_files((dir / "a.en").string(), (dir / "a.de").string(), testing::parallel_tokenizer(), {}),
      std::runtime_error);
}

}  // namespace
}  // namespace tfm
