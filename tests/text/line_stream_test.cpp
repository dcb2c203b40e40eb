#include "text/line_stream.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/test_support.h"

namespace tfm {
namespace {

/// Replaces standard input with the read end of a pipe for the test's lifetime; the test writes
/// to `write_end` (and closes it to end the input).
class PipedStdin {
 public:
  PipedStdin() {
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
    saved_ = dup(STDIN_FILENO);
    dup2(fds[0], STDIN_FILENO);
    close(fds[0]);
    write_end = fds[1];
  }
  ~PipedStdin() {
    close_input();
    dup2(saved_, STDIN_FILENO);
    close(saved_);
  }
  void write(const std::string& text) const {
    ASSERT_EQ(::write(write_end, text.data(), text.size()), ssize_t(text.size()));
  }
  void close_input() {
    if (write_end >= 0) close(write_end);
    write_end = -1;
  }
  int write_end = -1;

 private:
  int saved_ = -1;
};

TEST(LineStream, ReadsAFileInChunksAndNumbersThem) {
  testing::TempDir dir;
  testing::write_text(dir / "in.txt", "one\r\ntwo\n\nfour\nfive");
  LineStream stream((dir / "in.txt").string());
  std::vector<std::string> lines;
  ASSERT_TRUE(stream.next_chunk(lines, 2));
  EXPECT_EQ(lines, (std::vector<std::string>{"one", "two"}));
  EXPECT_EQ(stream.first_line_number(), 1u);
  ASSERT_TRUE(stream.next_chunk(lines, 2));
  EXPECT_EQ(lines, (std::vector<std::string>{"", "four"})) << "an empty line is a line";
  EXPECT_EQ(stream.first_line_number(), 3u);
  ASSERT_TRUE(stream.next_chunk(lines, 2));
  EXPECT_EQ(lines, (std::vector<std::string>{"five"})) << "an unterminated last line still counts";
  EXPECT_EQ(stream.first_line_number(), 5u);
  EXPECT_FALSE(stream.next_chunk(lines, 2));
  EXPECT_TRUE(lines.empty());
}

TEST(LineStream, AnswersInteractiveInputWithoutWaitingForMore) {
  PipedStdin input;
  LineStream stream("-");
  EXPECT_EQ(stream.name(), "<stdin>");
  std::vector<std::string> lines;
  input.write("hello\r\nworld\npart");
  // The writer is still open: the two complete lines come back now, not at end of input.
  ASSERT_TRUE(stream.next_chunk(lines, 100));
  EXPECT_EQ(lines, (std::vector<std::string>{"hello", "world"}));
  input.write("ial\n");
  ASSERT_TRUE(stream.next_chunk(lines, 100));
  EXPECT_EQ(lines, (std::vector<std::string>{"partial"})) << "a line split across writes is joined";
  EXPECT_EQ(stream.first_line_number(), 3u);
  input.write("last");
  input.close_input();
  ASSERT_TRUE(stream.next_chunk(lines, 100));
  EXPECT_EQ(lines, (std::vector<std::string>{"last"}));
  EXPECT_FALSE(stream.next_chunk(lines, 100));
}

TEST(LineStream, ChunksOfStdinRespectTheLimit) {
  PipedStdin input;
  LineStream stream("-");
  input.write("a\nb\nc\n");
  input.close_input();
  std::vector<std::string> lines;
  ASSERT_TRUE(stream.next_chunk(lines, 2));
  EXPECT_EQ(lines, (std::vector<std::string>{"a", "b"}));
  ASSERT_TRUE(stream.next_chunk(lines, 2));
  EXPECT_EQ(lines, (std::vector<std::string>{"c"}));
  EXPECT_FALSE(stream.next_chunk(lines, 2));
}

TEST(LineStream, MissingFileNamesThePath) {
  try {
    LineStream stream("/nonexistent/input.txt");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent/input.txt"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace tfm
