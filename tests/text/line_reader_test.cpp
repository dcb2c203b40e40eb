#include "text/line_reader.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <vector>

#include "tests/test_support.h"

namespace tfm {
namespace {

std::vector<std::string> read_all(const std::string& path) {
  LineReader reader(path);
  std::vector<std::string> lines;
  for (std::string line; reader.next(line);) lines.push_back(line);
  return lines;
}

void write_gzip(const std::filesystem::path& path, const std::string& text) {
  gzFile file = gzopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  gzwrite(file, text.data(), static_cast<unsigned>(text.size()));
  gzclose(file);
}

TEST(LineReader, KeepsEmptyLinesAndStripsLineEndings) {
  testing::TempDir dir;
  testing::write_text(dir / "a.txt", "first\r\n\nthird  \nlast without newline");
  EXPECT_EQ(read_all((dir / "a.txt").string()),
            (std::vector<std::string>{"first", "", "third  ", "last without newline"}));
}

TEST(LineReader, ReadsGzipTransparently) {
  testing::TempDir dir;
  std::string big;
  for (int i = 0; i < 20000; ++i) big += "Zeile " + std::to_string(i) + " mit Ümlauten\n";
  write_gzip(dir / "a.gz", big);
  const auto lines = read_all((dir / "a.gz").string());
  ASSERT_EQ(lines.size(), 20000u);
  EXPECT_EQ(lines[12345], "Zeile 12345 mit Ümlauten");
}

TEST(LineReader, CountsLinesForMessages) {
  testing::TempDir dir;
  testing::write_text(dir / "a.txt", "x\ny\n");
  LineReader reader((dir / "a.txt").string());
  std::string line;
  reader.next(line);
  reader.next(line);
  EXPECT_EQ(reader.where(), (dir / "a.txt").string() + ":2");
  EXPECT_FALSE(reader.next(line));
}

TEST(LineReader, MissingFileNamesIt) {
  try {
    LineReader reader("/nonexistent/corpus.en");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent/corpus.en"), std::string::npos) << error.what();
  }
}

TEST(LineReader, TruncatedGzipIsAnError) {
  testing::TempDir dir;
  std::string text;
  for (int i = 0; i < 5000; ++i) text += "line " + std::to_string(i) + "\n";
  write_gzip(dir / "full.gz", text);
  std::ifstream in(dir / "full.gz", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  testing::write_text(dir / "cut.gz", bytes.substr(0, bytes.size() / 2));
  EXPECT_THROW(read_all((dir / "cut.gz").string()), std::runtime_error);
}

}  // namespace
}  // namespace tfm
