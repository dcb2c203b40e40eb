#pragma once
#include <string>

#include <torch/serialize/archive.h>
#include <torch/types.h>

// The files model files and checkpoints live in: LibTorch's zip archives, written durably and
// read only after every record's checksum is verified.

namespace tfm {

/// Opens a file written by save_archive (std::runtime_error if it is not one). Every zip record's
/// CRC-32 is verified first (model/zip_checksums.h), a full read of the file.
torch::serialize::InputArchive open_archive(const std::string& path, const torch::Device& device);

/// While one of these lives, open_archive verifies each version of a file (device, inode, size,
/// change times) once instead of at every open. For a sequence that opens one file several times
/// and writes none, such as resuming from checkpoint_last.pt (its options, tokenizer, model and
/// optimizer state: four full CRC passes, about a second each for a 1 GB checkpoint). Only there:
/// file times are as coarse as the kernel's tick, so a file rewritten in place with the same size
/// within a few milliseconds could pass for the version already verified.
class VerifyOnceScope {
 public:
  VerifyOnceScope();
  ~VerifyOnceScope();
  VerifyOnceScope(const VerifyOnceScope&) = delete;
  VerifyOnceScope& operator=(const VerifyOnceScope&) = delete;
};

/// Writes through a temporary file and a rename, so a crash never leaves a half-written file.
void save_archive(torch::serialize::OutputArchive& archive, const std::string& path);

}  // namespace tfm
