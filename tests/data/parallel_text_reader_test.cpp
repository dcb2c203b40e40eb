#include "data/parallel_text_reader.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/data_test_support.h"

namespace tfm {
namespace {

using testing::error_of;

std::vector<TextPair> read_all(ParallelTextReader reader, size_t chunk = 3) {
  std::vector<TextPair> all, chunk_pairs;
  while (reader.read(chunk_pairs, chunk) > 0) all.insert(all.end(), chunk_pairs.begin(), chunk_pairs.end());
  EXPECT_EQ(reader.pairs_read(), static_cast<int64_t>(all.size()));
  return all;
}

std::vector<std::string> sources(const std::vector<TextPair>& pairs) {
  std::vector<std::string> out;
  for (const auto& pair : pairs) out.push_back(pair.source);
  return out;
}

std::vector<std::string> targets(const std::vector<TextPair>& pairs) {
  std::vector<std::string> out;
  for (const auto& pair : pairs) out.push_back(pair.target);
  return out;
}

TEST(ParallelTextReader, TwoAlignedFilesInChunksKeepEveryLineAsItIs) {
  testing::TempDir dir;
  const std::vector<std::string> en = {"A man.", "", "  spaced  ", "Two dogs.", "Ünïcode ✓", "last"};
  const std::vector<std::string> de = {"Ein Mann.", "leer", "x", "Zwei Hunde.", "Ümlaut", "letzte"};
  testing::write_lines(dir / "train.en", en);
  testing::write_lines(dir / "train.de.gz", de);
  const auto pairs =
      read_all(ParallelTextReader::open_files((dir / "train.en").string(), (dir / "train.de.gz").string()), 4);
  EXPECT_EQ(sources(pairs), en);
  EXPECT_EQ(targets(pairs), de);
}

TEST(ParallelTextReader, TsvSplitsAtTheTab) {
  testing::TempDir dir;
  testing::write_text(dir / "train.tsv", "A man.\tEin Mann.\r\n\tnur Ziel\nnur Quelle\t\n");
  const auto pairs = read_all(ParallelTextReader::open_tsv((dir / "train.tsv").string()));
  EXPECT_EQ(sources(pairs), (std::vector<std::string>{"A man.", "", "nur Quelle"}));
  EXPECT_EQ(targets(pairs), (std::vector<std::string>{"Ein Mann.", "nur Ziel", ""}));
}

TEST(ParallelTextReader, TsvLineWithoutExactlyOneTabNamesFileAndLine) {
  testing::TempDir dir;
  const std::string path = (dir / "train.tsv").string();
  testing::write_text(path, "a\tb\nno tab here\n");
  EXPECT_NE(error_of<std::runtime_error>([&] { read_all(ParallelTextReader::open_tsv(path)); }).find(path + ":2: "),
            std::string::npos);
  testing::write_text(path, "a\tb\tc\n");
  EXPECT_NE(error_of<std::runtime_error>([&] {
              read_all(ParallelTextReader::open_tsv(path));
            }).find(path + ":1: expected source<TAB>target, found more than one TAB"),
            std::string::npos);
}

TEST(ParallelTextReader, WmtSgmlSegmentsWithEntitiesDecoded) {
  testing::TempDir dir;
  testing::write_text(
      dir / "newstest-src.en.sgm",
      "<srcset setid=\"newstest2014\" srclang=\"en\">\n<doc docid=\"1\">\n"
      "<seg id=\"1\">Tom &amp; Jerry</seg>\n<seg id=\"2\">&quot;Hi&quot; &lt;3</seg>\n</doc>\n</srcset>\n");
  testing::write_text(
      dir / "newstest-ref.de.sgm",
      "<refset setid=\"newstest2014\" trglang=\"de\">\n<doc docid=\"1\">\n"
      "<seg id=\"1\">Tom &amp; Jerry</seg>\n<seg id=\"2\">&#8222;Hallo&#8220;</seg>\n</doc>\n</refset>\n");
  ParallelTextReader reader =
      ParallelTextReader::open_files((dir / "newstest-src.en.sgm").string(), (dir / "newstest-ref.de.sgm").string());
  EXPECT_NE(reader.where(1).find("newstest-src.en.sgm segment 2"), std::string::npos) << reader.where(1);
  const auto pairs = read_all(std::move(reader));
  EXPECT_EQ(sources(pairs), (std::vector<std::string>{"Tom & Jerry", "\"Hi\" <3"}));
  EXPECT_EQ(targets(pairs), (std::vector<std::string>{"Tom & Jerry", "\u201EHallo\u201C"}));
}

TEST(ParallelTextReader, MismatchedLineCountsNameBothFilesAndCounts) {
  testing::TempDir dir;
  const std::string en = (dir / "train.en").string(), de = (dir / "train.de.gz").string();
  testing::write_lines(en, {"a", "b", "c"});
  testing::write_lines(de, {"a", "b", "c", "d", "e"});
  const std::string message = error_of<std::runtime_error>([&] { read_all(ParallelTextReader::open_files(en, de)); });
  EXPECT_NE(message.find(en + " has 3 lines but " + de + " has 5"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << "one line";
  // The other way round too.
  const std::string swapped = error_of<std::runtime_error>([&] { read_all(ParallelTextReader::open_files(de, en)); });
  EXPECT_NE(swapped.find(de + " has 5 lines but " + en + " has 3"), std::string::npos) << swapped;
}

TEST(ParallelTextReader, InvalidUtf8NamesFileAndLine) {
  testing::TempDir dir;
  const std::string en = (dir / "train.en").string(), de = (dir / "train.de").string();
  testing::write_lines(en, {"fine", "fine", "fine"});
  testing::write_lines(de, {"gut", "gut",
                            "Stra\xdf"
                            "e"});  // Latin-1 ß
  const std::string message = error_of<std::runtime_error>([&] { read_all(ParallelTextReader::open_files(en, de)); });
  EXPECT_NE(message.find(de + ":3: not valid UTF-8"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << "one line";
}

TEST(ParallelTextReader, TruncatedGzipIsAnErrorNamingTheFile) {
  testing::TempDir dir;
  std::vector<std::string> lines;
  for (int i = 0; i < 5000; ++i) lines.push_back("line " + std::to_string(i));
  testing::write_lines(dir / "full.gz", lines);
  std::ifstream in(dir / "full.gz", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string cut = (dir / "cut.de.gz").string();
  testing::write_text(cut, bytes.substr(0, bytes.size() / 2));
  testing::write_lines(dir / "full.en", lines);
  const std::string message = error_of<std::runtime_error>(
      [&] { read_all(ParallelTextReader::open_files((dir / "full.en").string(), cut), 1000); });
  EXPECT_NE(message.find(cut + ": truncated gzip file"), std::string::npos) << message;
}

TEST(ParallelTextReader, MissingFileNamesIt) {
  const std::string message = error_of<std::runtime_error>(
      [] { ParallelTextReader::open_files("/nonexistent/train.en", "/nonexistent/train.de"); });
  EXPECT_NE(message.find("/nonexistent/train.en"), std::string::npos) << message;
}

}  // namespace
}  // namespace tfm
