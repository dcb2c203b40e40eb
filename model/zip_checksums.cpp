#include "model/zip_checksums.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "model/pickle_bounds.h"
#include "runtime/crc32.h"

namespace tfm {
namespace {

// Record signatures and sizes from the zip specification (APPNOTE.TXT, sections 4.3.7-4.3.16).
constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kEndOfDirectory = 0x06054b50;
constexpr uint32_t kZip64EndOfDirectory = 0x06064b50;
constexpr uint32_t kZip64Locator = 0x07064b50;
constexpr size_t kEndOfDirectoryBytes = 22;
constexpr size_t kCentralHeaderBytes = 46;
constexpr size_t kLocalHeaderBytes = 30;
constexpr uint16_t kZip64ExtraId = 0x0001;

uint16_t u16(const unsigned char* p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }
uint32_t u32(const unsigned char* p) { return u16(p) | static_cast<uint32_t>(u16(p + 2)) << 16; }
uint64_t u64(const unsigned char* p) { return u32(p) | static_cast<uint64_t>(u32(p + 4)) << 32; }

class File {
 public:
  explicit File(const std::string& path) : path_(path), fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd_ < 0) throw std::runtime_error(path + ": cannot open (" + std::strerror(errno) + ")");
    const off_t end = ::lseek(fd_, 0, SEEK_END);
    if (end < 0) throw std::runtime_error(path + ": cannot read (" + std::strerror(errno) + ")");
    size_ = static_cast<uint64_t>(end);
  }
  ~File() { ::close(fd_); }
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  uint64_t size() const { return size_; }

  /// `size` bytes at `offset`, or an error naming what was being read.
  std::vector<unsigned char> read(uint64_t offset, uint64_t size, const char* what) const {
    check_inside(offset, size, what);  // before allocating what a damaged directory claims
    std::vector<unsigned char> bytes(size);
    read_into(bytes.data(), offset, size, what);
    return bytes;
  }

  /// CRC-32 of `size` bytes at `offset`. Read through one block small enough to stay in a core's
  /// L2 between the copy and the checksum, and allocated once: a new block per read faulted in
  /// fresh pages for each.
  uint32_t record_crc32(uint64_t offset, uint64_t size) const {
    constexpr uint64_t kBlock = 256 << 10;
    std::vector<unsigned char> block(std::min(kBlock, size));
    uint32_t crc = 0;
    for (uint64_t done = 0; done < size;) {
      const uint64_t chunk = std::min(kBlock, size - done);
      read_into(block.data(), offset + done, chunk, "a record's data");
      crc = crc32_of(crc, block.data(), chunk);
      done += chunk;
    }
    return crc;
  }

  [[noreturn]] void damaged(const std::string& what) const {
    throw std::runtime_error(path_ + ": not a model file, or a damaged or truncated one (" + what + ")");
  }

 private:
  void check_inside(uint64_t offset, uint64_t size, const char* what) const {
    if (offset > size_ || size > size_ - offset) damaged(std::string(what) + " lies past the end of the file");
  }

  void read_into(unsigned char* to, uint64_t offset, uint64_t size, const char* what) const {
    check_inside(offset, size, what);
    for (uint64_t done = 0; done < size;) {
      const ssize_t n = ::pread(fd_, to + done, size - done, static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw std::runtime_error(path_ + ": cannot read (" + std::strerror(n < 0 ? errno : EIO) + ")");
      done += static_cast<uint64_t>(n);
    }
  }

  std::string path_;
  int fd_;
  uint64_t size_ = 0;
};

struct Directory {
  uint64_t entries = 0, offset = 0, size = 0;
};

/// Finds the end-of-central-directory record (the last one; a comment of up to 64 KB may follow).
Directory find_directory(const File& file) {
  if (file.size() < kEndOfDirectoryBytes) file.damaged("too short for a zip archive");
  const uint64_t tail_size = std::min<uint64_t>(file.size(), kEndOfDirectoryBytes + 0xFFFF);
  const uint64_t tail_at = file.size() - tail_size;
  const auto tail = file.read(tail_at, tail_size, "the end of the archive");
  for (uint64_t i = tail_size - kEndOfDirectoryBytes + 1; i-- > 0;) {
    const unsigned char* p = tail.data() + i;
    if (u32(p) != kEndOfDirectory) continue;
    Directory directory{u16(p + 10), u32(p + 16), u32(p + 12)};
    const bool zip64 = directory.entries == 0xFFFF || directory.offset == 0xFFFFFFFF || directory.size == 0xFFFFFFFF;
    if (!zip64) return directory;
    const uint64_t record_at = tail_at + i;
    if (record_at < 20) file.damaged("no zip64 directory locator");
    const auto locator = file.read(record_at - 20, 20, "the zip64 directory locator");
    if (u32(locator.data()) != kZip64Locator) file.damaged("no zip64 directory locator");
    const auto record = file.read(u64(locator.data() + 8), 56, "the zip64 directory");
    if (u32(record.data()) != kZip64EndOfDirectory) file.damaged("bad zip64 directory");
    return {u64(record.data() + 32), u64(record.data() + 48), u64(record.data() + 40)};
  }
  file.damaged("no zip directory at its end");
}

}  // namespace

void verify_zip_checksums(const std::string& path, bool checksums) {
  const File file(path);
  const Directory directory = find_directory(file);
  const auto listing = file.read(directory.offset, directory.size, "the zip directory");
  size_t at = 0;
  for (uint64_t entry = 0; entry < directory.entries; ++entry) {
    if (listing.size() - at < kCentralHeaderBytes || u32(listing.data() + at) != kCentralHeader) {
      file.damaged("zip directory entry " + std::to_string(entry) + " is broken");
    }
    const unsigned char* p = listing.data() + at;
    const uint16_t method = u16(p + 10);
    const uint32_t stored_crc = u32(p + 16);
    uint64_t compressed = u32(p + 20), uncompressed = u32(p + 24), local = u32(p + 42);
    const size_t name_bytes = u16(p + 28), extra_bytes = u16(p + 30), comment_bytes = u16(p + 32);
    if (listing.size() - at - kCentralHeaderBytes < name_bytes + extra_bytes + comment_bytes) {
      file.damaged("zip directory entry " + std::to_string(entry) + " is broken");
    }
    const std::string name(reinterpret_cast<const char*>(p + kCentralHeaderBytes), name_bytes);
    // Zip64: sizes and offset that did not fit in 32 bits follow, in this order, in extra field 1.
    for (size_t e = 0; e + 4 <= extra_bytes;) {
      const unsigned char* field = p + kCentralHeaderBytes + name_bytes + e;
      const size_t field_bytes = u16(field + 2);
      if (e + 4 + field_bytes > extra_bytes) break;
      if (u16(field) == kZip64ExtraId) {
        size_t v = 4;
        for (uint64_t* value : {&uncompressed, &compressed, &local}) {
          if (*value != 0xFFFFFFFF) continue;
          if (v + 8 > 4 + field_bytes) file.damaged(name + ": broken zip64 sizes");
          *value = u64(field + v);
          v += 8;
        }
      }
      e += 4 + field_bytes;
    }
    at += kCentralHeaderBytes + name_bytes + extra_bytes + comment_bytes;
    const auto header = file.read(local, kLocalHeaderBytes, "a record header");
    if (u32(header.data()) != kLocalHeader) file.damaged(name + ": its record header is missing");
    const uint64_t data_at = local + kLocalHeaderBytes + u16(header.data() + 26) + u16(header.data() + 28);
    // LibTorch reads a record by allocating its size from this directory: it must lie in the file.
    if (data_at > file.size() || compressed > file.size() - data_at)
      file.damaged(name + " lies past the end of the file");
    const bool pickle = name.size() > 4 && name.compare(name.size() - 4, 4, ".pkl") == 0;
    if (pickle) {
      // Walked before LibTorch's unpickler trusts its numbers; tfm and LibTorch store pickles uncompressed.
      if (method != 0 || compressed != uncompressed) file.damaged(name + ": a compressed pickle");
      const auto bytes = file.read(data_at, uncompressed, "a pickle");
      check_pickle_bounds(bytes.data(), bytes.size(), path + " (" + name + ")");
    }
    // LibTorch stores records uncompressed. A CRC of 0 means the writer did not compute one
    // (torch.serialization.set_crc32_options(False)); such records cannot be checked.
    if (!checksums || method != 0 || stored_crc == 0) continue;
    if (compressed != uncompressed) file.damaged(name + ": inconsistent sizes");
    if (file.record_crc32(data_at, uncompressed) != stored_crc) {
      throw std::runtime_error(path + ": damaged file (record " + name + " fails its checksum: the file changed " +
                               "after it was written)");
    }
  }
}

}  // namespace tfm
