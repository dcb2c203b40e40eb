#include "model/model_file.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>

#include "model/archive_file.h"
#include "tests/tensor_assert.h"
#include "tests/test_support.h"

namespace tfm {
namespace {

ModelConfig small_config(int64_t d_ff = 32) {
  ModelConfig config;
  config.vocab_size = 19;
  config.d_model = 16;
  config.d_ff = d_ff;
  config.heads = 2;
  config.encoder_layers = 1;
  config.decoder_layers = 2;
  return config;
}

/// Writes an archive like write_model does, but with the weights of `weights_from` under the
/// config of `config_from`, leaving out `skip` (to forge broken files).
void write_forged(const std::string& path, Transformer& config_from, Transformer& weights_from,
                  const std::string& skip = "", int64_t version = kModelFormatVersion) {
  torch::serialize::OutputArchive archive;
  archive.write("format", c10::IValue(std::string("tfm-model")));
  archive.write("format_version", c10::IValue(version));
  archive.write("model_config", c10::IValue(nlohmann::json(config_from->config()).dump()));
  archive.write("tokenizer", torch::zeros({3}, torch::kUInt8));
  torch::serialize::OutputArchive weights;
  for (const auto& item : weights_from->named_parameters()) {
    if (item.key() != skip) weights.write(item.key(), item.value().detach());
  }
  archive.write("weights", weights);
  archive.save_to(path);
}

TEST(ModelFile, SaveLoadReproducesOutputsBitForBit) {
  testing::TempDir dir;
  torch::manual_seed(3);
  Transformer model(small_config());
  model->eval();
  const std::string tokenizer_bytes("\x00\x01proto\xff", 8);
  save_model_file((dir / "m.pt").string(), model, tokenizer_bytes);
  auto loaded = load_model_file((dir / "m.pt").string(), torch::kCPU);
  loaded.model->eval();
  EXPECT_EQ(loaded.tokenizer_proto, tokenizer_bytes);
  EXPECT_EQ(nlohmann::json(loaded.config), nlohmann::json(model->config()));
  const auto source = torch::randint(4, 19, {2, 5}, torch::kLong);
  const auto target = torch::randint(4, 19, {2, 4}, torch::kLong);
  EXPECT_TRUE(torch::equal(loaded.model->forward(source, target), model->forward(source, target)));
  EXPECT_FALSE(std::filesystem::exists(dir / "m.pt.tmp"));
}

// Loading takes a stored tensor as the parameter itself where it alone fills its storage. A file
// that stores two names over one storage (LibTorch writes a storage once however many tensors
// share it) still gives two parameters of their own: training one must not change the other.
TEST(ModelFile, TwoNamesOverOneStoredStorageLoadAsTwoParameters) {
  testing::TempDir dir;
  torch::manual_seed(4);
  Transformer model(small_config());
  auto parameters = model->named_parameters();
  std::string first, second;
  for (const auto& a : parameters) {
    for (const auto& b : parameters) {
      if (second.empty() && a.key() < b.key() && a.value().sizes() == b.value().sizes() && a.value().dim() == 2) {
        first = a.key();
        second = b.key();
      }
    }
  }
  ASSERT_FALSE(second.empty());
  parameters[second].set_data(parameters[first]);  // one storage under two names
  const std::string path = (dir / "m.pt").string();
  write_forged(path, model, model);
  {
    torch::serialize::InputArchive archive, weights;
    archive.load_from(path);
    ASSERT_TRUE(archive.try_read("weights", weights));
    torch::Tensor a, b;
    ASSERT_TRUE(weights.try_read(first, a) && weights.try_read(second, b));
    ASSERT_EQ(a.data_ptr(), b.data_ptr()) << "the file should hold " << first << " and " << second << " once";
  }
  auto loaded = load_model_file(path, torch::kCPU);
  const auto loaded_parameters = loaded.model->named_parameters();
  EXPECT_NE(loaded_parameters[first].data_ptr(), loaded_parameters[second].data_ptr());
  EXPECT_TRUE(torch::equal(loaded_parameters[first], parameters[first]));
  EXPECT_TRUE(torch::equal(loaded_parameters[second], parameters[first]));
}

TEST(ModelFile, AFileDamagedInsideAVerifyOnceScopeIsStillAnError) {
  // The scope skips re-verifying a file version it has seen; rewriting the file in place (same
  // inode, same size) changes its change time, so the damage is verified and caught.
  testing::TempDir dir;
  torch::manual_seed(5);
  Transformer model(small_config());
  const std::string path = (dir / "m.pt").string();
  save_model_file(path, model, "proto");
  VerifyOnceScope scope;
  load_model_file(path, torch::kCPU);
  load_model_file(path, torch::kCPU);  // the same version: loads without a second CRC pass
  const auto weight = model->named_parameters()["encoder.layers.0.feed_forward.w1.weight"].detach().contiguous();
  // File times come from the kernel's coarse clock (a tick of up to 10 ms): past one tick, the
  // rewrite has a change time of its own, as any real edit after a resume's loads would.
  std::this_thread::sleep_for(std::chrono::milliseconds(25));
  ASSERT_TRUE(testing::overwrite_after_pattern(path, std::string(static_cast<const char*>(weight.data_ptr()), 32), 8,
                                               std::string(8, '\xff')));
  EXPECT_THROW(load_model_file(path, torch::kCPU), std::runtime_error);
}

TEST(ModelFile, OverwrittenWeightBytesAreAnErrorNamingFileAndTensor) {
  // The reproduction: 8 bytes overwritten inside the stored weights. Found by content
  // (the first bytes of one weight), so the damage lands in tensor data, not in zip metadata.
  testing::TempDir dir;
  torch::manual_seed(4);
  Transformer model(small_config());
  const std::string path = (dir / "m.pt").string();
  save_model_file(path, model, "proto");
  const auto weight = model->named_parameters()["decoder.layers.1.feed_forward.w1.weight"].detach().contiguous();
  ASSERT_TRUE(testing::overwrite_after_pattern(path, std::string(static_cast<const char*>(weight.data_ptr()), 32), 8,
                                               std::string(8, '\xff')));
  try {
    load_model_file(path, torch::kCPU);
    FAIL() << "a damaged model file loaded";
  } catch (const std::runtime_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    // The zip record's CRC-32 catches it before LibTorch reads the record (model/zip_checksums.h).
    EXPECT_NE(message.find(path + ": damaged file (record archive/data/"), std::string::npos) << message;
    EXPECT_NE(message.find("fails its checksum"), std::string::npos) << message;
  }
}

TEST(ModelFile, MismatchedShapeIsAClearError) {
  testing::TempDir dir;
  Transformer model(small_config(32));
  Transformer other(small_config(64));
  write_forged((dir / "bad.pt").string(), model, other);
  try {
    load_model_file((dir / "bad.pt").string(), torch::kCPU);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("bad.pt: tensor encoder.layers.0.feed_forward.w1.weight has shape [64, 16], the model built "
                           "from its config expects [32, 16]"),
              std::string::npos)
        << message;
  }
}

TEST(ModelFile, MissingTensorIsAClearError) {
  testing::TempDir dir;
  Transformer model(small_config());
  write_forged((dir / "bad.pt").string(), model, model, "encoder.layers.0.self_attention.out_proj.bias");
  try {
    load_model_file((dir / "bad.pt").string(), torch::kCPU);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("missing tensor encoder.layers.0.self_attention.out_proj.bias"),
              std::string::npos)
        << error.what();
  }
}

TEST(ModelFile, WrongVersionAndGarbageAreClearErrors) {
  testing::TempDir dir;
  Transformer model(small_config());
  write_forged((dir / "v9.pt").string(), model, model, "", 9);
  try {
    load_model_file((dir / "v9.pt").string(), torch::kCPU);
    FAIL();
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("format version 9, this build reads 1"), std::string::npos)
        << error.what();
  }
  testing::write_text(dir / "garbage.pt", "definitely not a zip file");
  EXPECT_THROW(load_model_file((dir / "garbage.pt").string(), torch::kCPU), std::runtime_error);
  EXPECT_THROW(load_model_file((dir / "absent.pt").string(), torch::kCPU), std::runtime_error);
}

/// An archive with the given values under the header keys and no weights: what a foreign or
/// damaged file can present to the loader.
std::string forge_header(const std::filesystem::path& path, const c10::IValue& format, const c10::IValue& version,
                         const std::string& config_json) {
  torch::serialize::OutputArchive archive;
  archive.write("format", format);
  archive.write("format_version", version);
  archive.write("model_config", c10::IValue(config_json));
  archive.write("tokenizer", torch::zeros({3}, torch::kUInt8));
  archive.save_to(path.string());
  try {
    load_model_file(path.string(), torch::kCPU);
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return "(loaded)";
}

TEST(ModelFile, ValuesOfTheWrongTypeAreClearErrors) {
  // LibTorch's toStringRef()/toInt() would throw internal assertions (exit 4, a backtrace).
  testing::TempDir dir;
  const std::string config = nlohmann::json(small_config()).dump();
  const std::string format =
      forge_header(dir / "a.pt", c10::IValue(int64_t{7}), c10::IValue(kModelFormatVersion), config);
  EXPECT_NE(format.find("a.pt: not a tfm model file ('format' is not text)"), std::string::npos) << format;
  const std::string version =
      forge_header(dir / "b.pt", c10::IValue(std::string("tfm-model")), c10::IValue(std::string("1")), config);
  EXPECT_NE(version.find("b.pt: not a tfm model file ('format_version' is not a number)"), std::string::npos)
      << version;
}

TEST(ModelFile, ADamagedConfigIsAnErrorBeforeTheModelIsBuilt) {
  testing::TempDir dir;
  const c10::IValue format(std::string("tfm-model"));
  const c10::IValue version(kModelFormatVersion);
  ModelConfig huge = small_config();
  huge.d_model = int64_t{1} << 24;  // 2^24 x 2^24 attention matrices: petabytes, if built
  const std::string too_big = forge_header(dir / "big.pt", format, version, nlohmann::json(huge).dump());
  EXPECT_NE(too_big.find("big.pt: damaged model config (it describes a model larger than the"), std::string::npos)
      << too_big;
  ModelConfig odd = small_config();
  odd.heads = 3;
  const std::string invalid = forge_header(dir / "odd.pt", format, version, nlohmann::json(odd).dump());
  EXPECT_NE(invalid.find("odd.pt: damaged model config (heads 3: must be positive and divide d_model 16)"),
            std::string::npos)
      << invalid;
}

TEST(ModelFile, TruncatedFilesAreClearErrors) {
  testing::TempDir dir;
  Transformer model(small_config());
  const std::string path = (dir / "m.pt").string();
  save_model_file(path, model, "proto");
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const size_t keep : {size_t{0}, size_t{100}, bytes.size() / 2, bytes.size() - 10}) {
    testing::write_text(path, bytes.substr(0, keep));
    try {
      load_model_file(path, torch::kCPU);
      ADD_FAILURE() << "a file cut to " << keep << " bytes loaded";
    } catch (const std::runtime_error& error) {
      EXPECT_NE(std::string(error.what()).find(path + ": "), std::string::npos) << error.what();
    }
  }
}

}  // namespace
}  // namespace tfm
