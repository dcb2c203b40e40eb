#include "runtime/durable_file.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/test_support.h"

namespace tfm {
namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Only `name` is left in `dir`: no temporary file behind.
void expect_only(const testing::TempDir& dir, const std::string& name) {
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(entry.path().filename().string(), name);
  }
}

TEST(DurableFile, WritesReplacesAndPatchesWithoutLeavingTemporaries) {
  testing::TempDir dir;
  const auto path = (dir / "f.bin").string();
  write_file_durably(path, "first version");
  EXPECT_EQ(read_file(path), "first version");
  {
    DurableFileWriter writer(path);
    writer.write("xxxx", 4);
    const std::string large(3 << 20, 'a');  // past the buffer: written straight through
    writer.write(large.data(), large.size());
    writer.write("tail", 4);
    writer.write_at(0, "HEAD", 4);  // a header completed at the end
    writer.commit();
  }
  const std::string written = read_file(path);
  ASSERT_EQ(written.size(), 8U + (3U << 20));
  EXPECT_EQ(written.substr(0, 4), "HEAD");
  EXPECT_EQ(written.substr(written.size() - 4), "tail");
  copy_file_durably(path, (dir / "copy.bin").string());
  EXPECT_EQ(read_file(dir / "copy.bin"), written);
  std::filesystem::remove(dir / "copy.bin");
  expect_only(dir, "f.bin");
}

TEST(DurableFile, AWriterThatIsNotCommittedLeavesThePreviousFile) {
  testing::TempDir dir;
  const auto path = (dir / "f.bin").string();
  write_file_durably(path, "previous");
  {
    DurableFileWriter writer(path);
    writer.write("half of the new one", 19);
  }  // an exception on the way out, say
  EXPECT_EQ(read_file(path), "previous");
  expect_only(dir, "f.bin");
}

TEST(DurableFile, AFullDiskIsAnErrorNamingTheFileAndKeepsThePreviousOne) {
  testing::TempDir dir;
  const auto path = (dir / "f.bin").string();
  write_file_durably(path, "previous");
  // A file size limit stands in for a full disk: writes past it fail with EFBIG.
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit old_limit{};
  getrlimit(RLIMIT_FSIZE, &old_limit);
  rlimit small = old_limit;
  small.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string error;
  try {
    write_file_durably(path, std::string(1 << 20, 'z'));
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_NE(error.find(path + ": cannot write"), std::string::npos) << error;
  EXPECT_NE(error.find("the previous file is kept"), std::string::npos) << error;
  EXPECT_EQ(read_file(path), "previous");
  expect_only(dir, "f.bin");
}

TEST(DurableFile, AnUnwritableDirectoryIsAnErrorNamingTheFile) {
  testing::TempDir dir;
  const auto path = (dir / "missing" / "f.bin").string();
  EXPECT_THROW(write_file_durably(path, "x"), std::runtime_error);
  EXPECT_THROW(copy_file_durably((dir / "absent").string(), (dir / "g.bin").string()), std::runtime_error);
  expect_only(dir, "");
}

TEST(DurableFile, ANameHeldByWhatIsNotARegularFileIsLeftAlone) {
  // Renamed over, a device (/dev/full, as root) or a pipe would be replaced by the file.
  testing::TempDir dir;
  const auto pipe = dir / "pipe";
  ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0);
  const auto directory = dir / "directory";
  std::filesystem::create_directory(directory);
  for (const auto& path : {pipe, directory}) {
    try {
      write_file_durably(path.string(), "x");
      ADD_FAILURE() << path << " was written over";
    } catch (const std::runtime_error& error) {
      EXPECT_NE(std::string(error.what()).find("not a regular file"), std::string::npos) << error.what();
    }
  }
  EXPECT_TRUE(std::filesystem::is_fifo(pipe));
  EXPECT_TRUE(std::filesystem::is_directory(directory));
  EXPECT_FALSE(std::filesystem::exists(dir / "pipe.tmp"));
}

}  // namespace
}  // namespace tfm
