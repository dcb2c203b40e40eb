#pragma once
// Helpers shared by the GoogleTest files: where the shared data lives, temporary files,
// and tensor comparison with a useful failure message.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace tfm::testing {

/// TFM_DATA_DIR if set, else the checkout's ../shared (CTest passes it as TFM_DEFAULT_DATA_DIR).
inline std::filesystem::path data_dir() {
  if (const char* dir = std::getenv("TFM_DATA_DIR"); dir != nullptr && *dir != '\0') return dir;
  if (const char* dir = std::getenv("TFM_DEFAULT_DATA_DIR"); dir != nullptr && *dir != '\0') return dir;
  return "../shared";
}

/// A fresh directory under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tfm-test-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

/// Overwrites `bytes` in the file at `offset` past the first occurrence of `pattern`, in place as
/// `dd conv=notrunc` would: damage placed by content (say a tensor's first bytes), not by a
/// guessed offset. False if the pattern does not occur.
inline bool overwrite_after_pattern(const std::filesystem::path& path, const std::string& pattern, size_t offset,
                                    const std::string& bytes) {
  std::ifstream in(path, std::ios::binary);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  const size_t at = content.find(pattern);
  if (at == std::string::npos) return false;
  content.replace(at + offset, bytes.size(), bytes);
  write_text(path, content);
  return true;
}

}  // namespace tfm::testing

/// Skips the current test, saying which shared file is missing and how to provide it.
#define TFM_REQUIRE_DATA(relative_path)                                                   \
  do {                                                                                    \
    const auto tfm_required_path = ::tfm::testing::data_dir() / (relative_path);          \
    if (!std::filesystem::exists(tfm_required_path)) {                                    \
      GTEST_SKIP() << "needs " << tfm_required_path.string()                              \
                   << " (set TFM_DATA_DIR to the directory holding data/ and testdata/)"; \
    }                                                                                     \
  } while (0)
