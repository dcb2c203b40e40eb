#include "runtime/directory_lock.h"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "tests/test_support.h"

namespace tfm {
namespace {

TEST(DirectoryLock, OneHolderAtATimeAndFreeOnceItIsGone) {
  // flock belongs to an open file: a second lock in this same process contends like another process's.
  testing::TempDir dir;
  auto holder = std::make_unique<DirectoryLock>(dir.path().string(), "--out", "tfm prepare");
  try {
    DirectoryLock second(dir.path().string(), "--out", "tfm prepare");
    ADD_FAILURE() << "a second lock was granted";
  } catch (const std::runtime_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("--out " + dir.path().string() + " is in use by another tfm prepare (pid "),
              std::string::npos)
        << message;
  }
  holder.reset();
  EXPECT_NO_THROW(DirectoryLock(dir.path().string(), "--out", "tfm prepare"));
}

TEST(DirectoryLock, AMissingDirectoryIsAnErrorNamingTheLockFile) {
  testing::TempDir dir;
  const std::string missing = (dir / "missing").string();
  try {
    DirectoryLock lock(missing, "--save-dir", "tfm train");
    ADD_FAILURE() << "locked a directory that does not exist";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find(missing + "/.lock"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace tfm
