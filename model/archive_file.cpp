#include "model/archive_file.h"

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>

#include <c10/util/Exception.h>

#include "model/zip_checksums.h"
#include "runtime/durable_file.h"

namespace tfm {
namespace {

using FileVersion = std::tuple<std::string, dev_t, ino_t, off_t, int64_t, int64_t>;

struct VerifyOnceState {
  std::mutex mutex;
  int scopes = 0;                  // live VerifyOnceScope objects
  std::set<FileVersion> verified;  // cleared when the last scope ends
};

VerifyOnceState& verify_once_state() {
  static VerifyOnceState state;
  return state;
}

/// verify_zip_checksums, skipped for a file version already verified inside a VerifyOnceScope.
void verify_zip_checksums_in_scope(const std::string& path) {
  auto& state = verify_once_state();
  struct stat info {};
  bool scoped = false;
  FileVersion version;
  {
    const std::lock_guard<std::mutex> lock(state.mutex);
    scoped = state.scopes > 0;
  }
  if (scoped && ::stat(path.c_str(), &info) == 0) {
    const auto nanoseconds = [](const timespec& t) { return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec; };
    version = {path, info.st_dev, info.st_ino, info.st_size, nanoseconds(info.st_mtim), nanoseconds(info.st_ctim)};
    const std::lock_guard<std::mutex> lock(state.mutex);
    if (state.verified.count(version) != 0) return;
  } else {
    scoped = false;  // a missing file: verify_zip_checksums reports it in its own words
  }
  verify_zip_checksums(path);
  if (scoped) {
    const std::lock_guard<std::mutex> lock(state.mutex);
    if (state.scopes > 0) state.verified.insert(version);
  }
}

}  // namespace

VerifyOnceScope::VerifyOnceScope() {
  auto& state = verify_once_state();
  const std::lock_guard<std::mutex> lock(state.mutex);
  ++state.scopes;
}

VerifyOnceScope::~VerifyOnceScope() {
  auto& state = verify_once_state();
  const std::lock_guard<std::mutex> lock(state.mutex);
  if (--state.scopes == 0) state.verified.clear();
}

torch::serialize::InputArchive open_archive(const std::string& path, const torch::Device& device) {
  // Before LibTorch reads a byte: it checks no checksums, and damaged input can make it throw
  // anything (std::out_of_range from its unpickler, found by fuzz/model_loader_fuzz.cpp).
  verify_zip_checksums_in_scope(path);
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path, device);
  } catch (const c10::Error& error) {
    const std::string message = error.what_without_backtrace();
    throw std::runtime_error(path + ": cannot read model file (" + message.substr(0, message.find('\n')) + ")");
  } catch (const std::exception& error) {
    const std::string message = error.what();
    throw std::runtime_error(path + ": cannot read model file (" + message.substr(0, message.find('\n')) + ")");
  }
  return archive;
}

void save_archive(torch::serialize::OutputArchive& archive, const std::string& path) {
  // Durably (a crash or a full disk leaves the old file or the new one), and through our own
  // writes: LibTorch's file writer throws from its destructor when a write comes up short, which
  // ends the process. DurableFileWriter remembers a failure and reports it at commit.
  DurableFileWriter file(path);
  try {
    archive.save_to([&](const void* data, size_t size) -> size_t {
      file.write(data, size);
      return size;
    });
  } catch (const c10::Error& e) {
    const std::string message = e.what_without_backtrace();
    throw std::runtime_error(path + ": cannot write (" + message.substr(0, message.find('\n')) + ")");
  }
  file.commit();
}

}  // namespace tfm
