#include "runtime/process_exit.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/test_support.h"

namespace tfm {
namespace {

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void create_empty(const std::filesystem::path& path) { std::ofstream(path).close(); }

/// A lock on the whole of `path` held by a child process until the object goes.
class LockInAnotherProcess {
 public:
  explicit LockInAnotherProcess(const std::string& path) {
    int locked[2];
    int release[2];
    EXPECT_EQ(::pipe(locked), 0);
    EXPECT_EQ(::pipe(release), 0);
    child_ = ::fork();
    if (child_ == 0) {  // only async-signal-safe calls: the parent may have threads
      ::close(locked[0]);
      ::close(release[1]);  // else the child's read below would wait for itself
      const int fd = ::open(path.c_str(), O_WRONLY);
      struct flock whole_file {};
      whole_file.l_type = F_WRLCK;
      whole_file.l_whence = SEEK_SET;
      const char held = fd >= 0 && ::fcntl(fd, F_SETLK, &whole_file) == 0 ? 'y' : 'n';
      (void)!::write(locked[1], &held, 1);
      char byte = 0;
      (void)!::read(release[0], &byte, 1);
      ::_exit(0);
    }
    ::close(locked[1]);
    ::close(release[0]);
    char held = 0;
    EXPECT_EQ(::read(locked[0], &held, 1), 1);
    ::close(locked[0]);
    held_ = held == 'y';
    release_ = release[1];
  }
  ~LockInAnotherProcess() {
    ::close(release_);  // the child's read returns
    int status = 0;
    ::waitpid(child_, &status, 0);
  }
  LockInAnotherProcess(const LockInAnotherProcess&) = delete;
  LockInAnotherProcess& operator=(const LockInAnotherProcess&) = delete;
  bool held() const { return held_; }

 private:
  pid_t child_ = -1;
  int release_ = -1;
  bool held_ = false;
};

TEST(ExitWithoutTeardown, FlushesBufferedOutputAndExitsWithTheCode) {
  // The "threadsafe" death test runs this test again from the top in a new process (LibTorch's
  // threads make a plain fork unsafe): the child finds the parent's file through the environment.
  testing::TempDir dir;
  const char* parents = std::getenv("TFM_TEST_EXIT_OUTPUT");
  const std::string path = parents != nullptr ? parents : (dir / "out.txt").string();
  ::setenv("TFM_TEST_EXIT_OUTPUT", path.c_str(), 1);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        std::FILE* file = std::fopen(path.c_str(), "w");
        std::fputs("written, not yet flushed\n", file);  // in the FILE's buffer, never closed
        exit_without_teardown(3);
      },
      ::testing::ExitedWithCode(3), "");
  ::unsetenv("TFM_TEST_EXIT_OUTPUT");
  EXPECT_EQ(read_text(path), "written, not yet flushed\n");
}

TEST(RemoveUnlessLockedElsewhere, RemovesAFileNobodyLocks) {
  testing::TempDir dir;
  const auto path = dir / "lock";
  create_empty(path);
  EXPECT_TRUE(remove_unless_locked_elsewhere(path.string()));
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(remove_unless_locked_elsewhere(path.string()));  // gone: nothing to remove
}

TEST(RemoveUnlessLockedElsewhere, RemovesAFileThisProcessLocks) {
  testing::TempDir dir;
  const auto path = dir / "lock";
  create_empty(path);
  const int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  struct flock whole_file {};
  whole_file.l_type = F_WRLCK;
  whole_file.l_whence = SEEK_SET;
  ASSERT_EQ(::fcntl(fd, F_SETLK, &whole_file), 0);
  EXPECT_TRUE(remove_unless_locked_elsewhere(path.string()));
  EXPECT_FALSE(std::filesystem::exists(path));
  ::close(fd);
}

TEST(RemoveUnlessLockedElsewhere, KeepsAFileAnotherProcessLocks) {
  testing::TempDir dir;
  const auto path = dir / "lock";
  create_empty(path);
  {
    const LockInAnotherProcess other(path.string());
    ASSERT_TRUE(other.held());
    EXPECT_FALSE(remove_unless_locked_elsewhere(path.string()));
    EXPECT_TRUE(std::filesystem::exists(path));
  }
  EXPECT_TRUE(remove_unless_locked_elsewhere(path.string()));  // the other process has gone
}

}  // namespace
}  // namespace tfm
