// The model and checkpoint loader (model/model_file.h): what `tfm translate`, `tfm average`
// and a resumed `tfm train` open first. The input is the file: a zip archive whose record
// checksums tfm verifies (model/zip_checksums.cpp), then LibTorch's unpickler, then our config,
// checksum and shape checks. Random damage rarely gets past the zip checksums, so when the
// first input byte is odd the target skips the CRC comparison (not the bounds of records and
// pickles) and hands the rest to LibTorch and read_model(), as a crafted file with correct
// checksums would reach them. LibTorch itself
// is not instrumented: coverage guides only our side; the sanitizers watch our accesses.
#include <torch/torch.h>

#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_support.h"
#include "model/model_file.h"
#include "model/zip_checksums.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool configured = [] {
    torch::set_num_threads(1);
    return true;
  }();
  (void)configured;
  if (size == 0) return 0;
  const bool past_checksums = data[0] & 1;
  const std::string path = tfm::fuzz::write_scratch("model.pt", data + 1, size - 1);
  try {
    if (past_checksums) {
      // What open_archive() checks besides the CRCs: records inside the file, bounded pickles.
      tfm::verify_zip_checksums(path, /*checksums=*/false);
      torch::serialize::InputArchive archive;
      try {
        archive.load_from(path, torch::Device(torch::kCPU));
      } catch (const std::exception&) {
        return 0;  // LibTorch's own rejection; open_archive() turns it into a one-line error
      }
      const auto loaded = tfm::read_model(archive, path, torch::kCPU);
      tfm::fuzz::require(loaded.model->config().vocab_size == loaded.config.vocab_size, "the model follows its config");
    } else {
      const auto loaded = tfm::load_model_file(path, torch::kCPU);
      tfm::fuzz::require(loaded.model->config().vocab_size == loaded.config.vocab_size, "the model follows its config");
    }
  } catch (const std::runtime_error&) {
    // A documented error naming the file: `tfm translate` exits 3 with it.
  } catch (const std::invalid_argument&) {
  } catch (const c10::Error&) {
    // Only in the past-the-checksums mode: load_model_file() turns it into a runtime_error.
    if (!past_checksums) throw;
  }
  return 0;
}
